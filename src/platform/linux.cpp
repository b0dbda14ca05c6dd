// The platform layer on Linux (include/weft/detail/platform.hpp): sched and
// pthread affinity calls, the cgroup quota and sysfs topology
// (src/topology.cpp reads those files), pthread_setname_np, prctl's timer
// slack and madvise.
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <thread>

#include "weft/detail/platform.hpp"
#include "weft/detail/worker_start.hpp"

namespace weft::detail::platform {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  // The main thread's mask (its thread id is the process id), so that a
  // pool made on a pinned thread (a job of another, pinned pool) may still
  // pin to any CPU of the process; the calling thread's if that fails.
  if (sched_getaffinity(getpid(), sizeof(set), &set) != 0) {
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
      // No mask to read (more CPUs than CPU_SETSIZE): every CPU counted.
      std::vector<int> all(std::max(1U, std::thread::hardware_concurrency()));
      for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
      return all;
    }
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::size_t affinity_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    return std::max<std::size_t>(1, std::thread::hardware_concurrency());
  }
  return std::max<std::size_t>(1, static_cast<std::size_t>(CPU_COUNT(&set)));
}

std::size_t cpu_quota() { return cgroup_cpu_limit(""); }

std::vector<int> one_per_core(const std::vector<int>& allowed) {
  return detail::one_per_core(allowed, "/sys/devices/system/cpu");
}

int cpu_limit() noexcept { return CPU_SETSIZE; }

std::error_code pin_this_thread(int cpu) noexcept {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return std::make_error_code(std::errc::invalid_argument);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  return rc == 0 ? std::error_code{} : std::error_code{rc, std::generic_category()};
}

const char* pin_call() noexcept { return "pthread_setaffinity_np"; }

int current_cpu() noexcept { return sched_getcpu(); }

std::vector<int> thread_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) != 0) return allowed_cpus();
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::string thread_name() {
  std::array<char, 16> name{};
  if (pthread_getname_np(pthread_self(), name.data(), name.size()) != 0) return {};
  return name.data();
}

void name_this_thread(const std::string& name) noexcept {
  // The kernel keeps 15 characters and a NUL; the end tells threads apart.
  constexpr std::size_t longest = 15;
  const char* text = name.c_str();
  if (name.size() > longest) text += name.size() - longest;
  pthread_setname_np(pthread_self(), text);
}

precise_sleeps::precise_sleeps() noexcept {
  // Wake at the deadline rather than up to 50 us after it (the default
  // timer slack). Per thread, so nothing to undo.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
}

precise_sleeps::~precise_sleeps() = default;

std::chrono::microseconds process_cpu_time() noexcept {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const auto us = [](const timeval& tv) {
    return std::chrono::seconds{tv.tv_sec} + std::chrono::microseconds{tv.tv_usec};
  };
  return us(ru.ru_utime) + us(ru.ru_stime);
}

void* aligned_allocate(std::size_t alignment, std::size_t bytes, bool huge_pages) noexcept {
  void* memory = std::aligned_alloc(alignment, bytes);  // NOLINT(cppcoreguidelines-no-malloc)
#ifdef MADV_HUGEPAGE
  if (memory != nullptr && huge_pages) ::madvise(memory, bytes, MADV_HUGEPAGE);
#else
  (void)huge_pages;
#endif
  return memory;
}

void aligned_free(void* memory) noexcept {
  std::free(memory);  // NOLINT(cppcoreguidelines-no-malloc)
}

}  // namespace weft::detail::platform
