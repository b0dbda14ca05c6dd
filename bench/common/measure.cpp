#include "common/measure.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>

namespace bench {
namespace {

std::chrono::nanoseconds to_ns(const timeval& tv) {
  return std::chrono::seconds(tv.tv_sec) + std::chrono::microseconds(tv.tv_usec);
}

rusage self_usage() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage;
}

// The sum of every live thread's CPU clock but `excluded`'s (0: none).
std::chrono::nanoseconds threads_cpu_time(pid_t excluded) {
  // getrusage() (and the process CPU clock) add a thread's time only at its
  // next tick or context switch, so a worker still busy when the work
  // returns would have up to a tick of that work counted in the idle window
  // that follows; a thread's own CPU clock is read up to date even while it
  // runs on another core. The clock id of a thread is Linux's ABI for it
  // (what glibc's pthread_getcpuclockid builds):
  // ((~tid) << 3) | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED.
  std::chrono::nanoseconds total{0};
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) {
    const rusage usage = self_usage();
    return to_ns(usage.ru_utime) + to_ns(usage.ru_stime);
  }
  while (const dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    const auto tid = static_cast<clockid_t>(std::stol(entry->d_name));
    if (tid == excluded) continue;
    const clockid_t clock = (~tid << 3) | 6;
    timespec ts{};
    if (clock_gettime(clock, &ts) == 0) {
      total += std::chrono::seconds{ts.tv_sec} + std::chrono::nanoseconds{ts.tv_nsec};
    }
  }
  closedir(tasks);
  return total;
}

}  // namespace

std::chrono::nanoseconds process_cpu_time() { return threads_cpu_time(0); }

std::chrono::nanoseconds other_threads_cpu_time() { return threads_cpu_time(gettid()); }

double peak_rss_mib() {
  // Linux reports ru_maxrss in KiB.
  return static_cast<double>(self_usage().ru_maxrss) / 1024.0;
}

double to_ms(std::chrono::nanoseconds d) noexcept {
  return std::chrono::duration<double, std::milli>(d).count();
}

double median(std::vector<double>& samples) {
  if (samples.empty()) return 0.0;
  const auto mid = samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 2);
  std::nth_element(samples.begin(), mid, samples.end());
  if (samples.size() % 2 == 1) return *mid;
  const double upper = *mid;
  const double lower = *std::max_element(samples.begin(), mid);
  return (lower + upper) / 2.0;
}

bool claim_process_for_peak_rss(std::string_view benchmark_name) {
  // Benchmarks run one after another on the main thread: no lock needed.
  static std::string owner;
  if (owner.empty()) owner = benchmark_name;
  return owner == benchmark_name;
}

}  // namespace bench
