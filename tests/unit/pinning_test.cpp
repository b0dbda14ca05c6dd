// pool_options::cpus (docs/control.md, "Pinning workers to CPUs"): worker i
// runs on cpus[i % cpus.size()], checked with sched_getcpu() and the
// thread's affinity mask; CPUs the process may not use are refused before
// any worker starts; weft::allowed_cpus() and weft::cpus_one_per_core().
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>  // mkdtemp
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>
#include <weft/detail/fault.hpp>
#include <weft/detail/worker_start.hpp>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;

// The CPUs in the calling thread's affinity mask.
std::vector<int> thread_mask() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(set), &set), 0);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// A CPU number below CPU_SETSIZE that this process may not use, if any.
std::optional<int> forbidden_cpu() {
  const std::vector<int> allowed = weft::allowed_cpus();
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!std::binary_search(allowed.begin(), allowed.end(), cpu)) return cpu;
  }
  return std::nullopt;
}

// Runs one job on every worker at once (each waits for the others), and
// returns, per worker index, the CPU its job ran on.
std::vector<int> cpu_of_each_worker(weft::pool& pool) {
  const std::size_t n = pool.size();
  std::vector<std::atomic<int>> cpu(n);
  for (auto& c : cpu) c.store(-1);
  std::atomic<std::size_t> arrived{0};
  std::atomic<bool> late{false};
  std::vector<weft::future<void>> jobs;
  for (std::size_t i = 0; i < n; ++i) {
    jobs.push_back(pool.submit([&] {
      const std::size_t index = weft::this_worker::index().value();
      arrived.fetch_add(1);
      // Until every worker holds one of these jobs, so that each runs one.
      const auto until = std::chrono::steady_clock::now() + 20s;
      while (arrived.load() < n) {
        if (std::chrono::steady_clock::now() > until) {
          late.store(true);
          break;
        }
        std::this_thread::yield();
      }
      cpu[index].store(sched_getcpu());
    }));
  }
  for (auto& j : jobs) j.get();
  EXPECT_FALSE(late.load()) << "not every worker took one of the jobs";
  std::vector<int> result;
  for (auto& c : cpu) result.push_back(c.load());
  return result;
}

int fib(int n) {
  if (n < 2) return n;
  auto [a, b] = weft::join([n] { return fib(n - 1); }, [n] { return fib(n - 2); });
  return a + b;
}

class pinning : public ::testing::TestWithParam<std::size_t> {};

TEST_P(pinning, worker_i_runs_on_cpus_i_round_robin) {
  const std::vector<int> allowed = weft::allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  const std::size_t n = GetParam();
  // Seen by each worker's start hook, which runs after its pinning.
  std::mutex m;
  std::vector<std::vector<int>> masks(n);
  std::vector<int> hook_cpus(n, -1);
  {
    weft::pool pool{{.threads = n, .cpus = allowed, .on_worker_start = [&](std::size_t i) {
                       const std::vector<int> mask = thread_mask();
                       const int cpu = sched_getcpu();
                       const std::lock_guard lock{m};
                       masks[i] = mask;
                       hook_cpus[i] = cpu;
                     }}};
    ASSERT_EQ(pool.size(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const int expected = allowed[i % allowed.size()];
      EXPECT_EQ(masks[i], std::vector<int>{expected}) << "worker " << i;
      EXPECT_EQ(hook_cpus[i], expected) << "worker " << i;
    }
    const std::vector<int> ran_on = cpu_of_each_worker(pool);
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(ran_on[i], allowed[i % allowed.size()]) << "worker " << i;
    }
    EXPECT_EQ(pool.submit([] { return fib(20); }).get(), 6765);
  }
  // The caller's own mask is left alone.
  EXPECT_EQ(thread_mask(), allowed);
}

TEST_P(pinning, a_list_in_any_order_with_repeats) {
  // The issue's {4, 7, 5}, on the CPUs this machine has: the last allowed
  // CPU first, then the first one twice.
  const std::vector<int> allowed = weft::allowed_cpus();
  const std::vector<int> cpus{allowed.back(), allowed.front(), allowed.front()};
  weft::pool pool{{.threads = GetParam(), .cpus = cpus}};
  const std::vector<int> ran_on = cpu_of_each_worker(pool);
  for (std::size_t i = 0; i < GetParam(); ++i) {
    EXPECT_EQ(ran_on[i], cpus[i % cpus.size()]) << "worker " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(workers, pinning, ::testing::Values(1, 2, 4, 8),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

TEST(pinning_options, without_threads_the_pool_has_one_worker_per_listed_cpu) {
  const std::vector<int> allowed = weft::allowed_cpus();
  weft::pool one{{.cpus = {allowed.front()}}};
  EXPECT_EQ(one.size(), 1U);
  weft::pool all{{.cpus = allowed}};
  EXPECT_EQ(all.size(), allowed.size());
  const std::vector<int> ran_on = cpu_of_each_worker(all);
  EXPECT_EQ(ran_on, allowed);
  weft::pool unpinned{weft::pool_options{}};
  EXPECT_EQ(unpinned.size(), weft::available_parallelism());
}

// No worker may have started when construction throws: the start hook
// counts the workers that did.
template <class Exception>
std::string construction_error(weft::pool_options options, std::atomic<int>& started) {
  options.on_worker_start = [&started](std::size_t) { started.fetch_add(1); };
  try {
    weft::pool pool{std::move(options)};
  } catch (const Exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "the pool was constructed";
  return {};
}

TEST(pinning_options, a_cpu_the_process_may_not_use_is_refused_at_construction) {
  const std::optional<int> forbidden = forbidden_cpu();
  if (!forbidden) GTEST_SKIP() << "this process may use every CPU number";
  const std::vector<int> allowed = weft::allowed_cpus();
  std::atomic<int> started{0};
  const std::string what = construction_error<weft::usage_error>(
      {.name = "pinned", .cpus = {allowed.front(), *forbidden}}, started);
  EXPECT_EQ(started.load(), 0);
  const std::string entry = "pool_options::cpus[1] = " + std::to_string(*forbidden);
  EXPECT_NE(what.find(entry), std::string::npos) << what;
  EXPECT_NE(what.find("may not use"), std::string::npos) << what;
  EXPECT_NE(what.find("'pinned'"), std::string::npos) << what;
  // The allowed set, as a CPU list ("0-1" on a 2-CPU machine).
  EXPECT_NE(what.find("allows CPUs " + std::to_string(allowed.front())), std::string::npos) << what;
}

TEST(pinning_options, negative_and_too_large_cpu_numbers_are_refused) {
  std::atomic<int> started{0};
  std::string what = construction_error<weft::usage_error>({.threads = 2, .cpus = {-1}}, started);
  EXPECT_NE(what.find("pool_options::cpus[0] = -1 is not a CPU number"), std::string::npos) << what;
  what = construction_error<weft::usage_error>({.cpus = {0, CPU_SETSIZE}}, started);
  EXPECT_NE(what.find("cpus[1] = " + std::to_string(CPU_SETSIZE) + " is not a CPU number"),
            std::string::npos)
      << what;
  EXPECT_EQ(started.load(), 0);
}

TEST(pinning_options, cpus_with_threads_0_is_refused) {
  std::atomic<int> started{0};
  const std::string what = construction_error<weft::usage_error>(
      {.threads = 0, .cpus = {weft::allowed_cpus().front()}}, started);
  EXPECT_NE(what.find("threads = 0"), std::string::npos) << what;
  // Without cpus, sequential mode is what it was.
  weft::pool sequential{{.threads = 0, .cpus = {}}};
  EXPECT_EQ(sequential.size(), 0U);
}

TEST(pinning_options, a_failed_pin_throws_system_error_after_stopping_every_worker) {
  const std::vector<int> allowed = weft::allowed_cpus();
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  weft::detail::fault::failing_pins.store(1, std::memory_order_relaxed);
  try {
    weft::pool pool{{.threads = 4,
                     .name = "pinfail",
                     .cpus = allowed,
                     .on_worker_start = [&](std::size_t) { started.fetch_add(1); },
                     .on_worker_stop = [&](std::size_t) { stopped.fetch_add(1); }}};
    ADD_FAILURE() << "the pool was constructed";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::invalid_argument);
    const std::string what = e.what();
    EXPECT_NE(what.find("pool 'pinfail'"), std::string::npos) << what;
    EXPECT_NE(what.find("pthread_setaffinity_np"), std::string::npos) << what;
  }
  weft::detail::fault::failing_pins.store(0, std::memory_order_relaxed);
  // The worker whose pin failed ran no hook; the others were started and,
  // joined before the constructor threw, stopped.
  EXPECT_EQ(started.load(), 3);
  EXPECT_EQ(stopped.load(), 3);
}

TEST(pinning_options, a_pool_made_on_a_pinned_worker_may_pin_anywhere_the_process_may) {
  const std::vector<int> allowed = weft::allowed_cpus();
  weft::pool outer{{.cpus = {allowed.front()}}};
  const std::vector<int> inner_cpus = outer
                                          .submit([&] {
                                            EXPECT_EQ(weft::allowed_cpus(), allowed);
                                            weft::pool inner{{.cpus = allowed}};
                                            return cpu_of_each_worker(inner);
                                          })
                                          .get();
  EXPECT_EQ(inner_cpus, allowed);
}

TEST(topology, allowed_cpus_is_this_process_mask) {
  const std::vector<int> allowed = weft::allowed_cpus();
  EXPECT_EQ(allowed, thread_mask());
  EXPECT_TRUE(std::is_sorted(allowed.begin(), allowed.end()));
  EXPECT_GE(allowed.size(), weft::available_parallelism());
}

TEST(topology, cpus_one_per_core_is_a_subset_with_one_cpu_per_core) {
  const std::vector<int> allowed = weft::allowed_cpus();
  const std::vector<int> cores = weft::cpus_one_per_core();
  ASSERT_FALSE(cores.empty());
  EXPECT_TRUE(std::is_sorted(cores.begin(), cores.end()));
  EXPECT_TRUE(std::includes(allowed.begin(), allowed.end(), cores.begin(), cores.end()));
  EXPECT_EQ(cores.front(), allowed.front());
  // Usable as is.
  weft::pool pool{{.cpus = cores}};
  EXPECT_EQ(pool.size(), cores.size());
}

TEST(topology, parse_cpu_list) {
  using weft::detail::parse_cpu_list;
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list("5"), std::vector<int>{5});
  EXPECT_EQ(parse_cpu_list("4,0"), (std::vector<int>{0, 4}));
  EXPECT_EQ(parse_cpu_list("\n"), std::vector<int>{});
  EXPECT_EQ(parse_cpu_list("3-1"), std::nullopt);
  EXPECT_EQ(parse_cpu_list("1,,2"), std::nullopt);
  EXPECT_EQ(parse_cpu_list("a"), std::nullopt);
  EXPECT_EQ(parse_cpu_list("0-"), std::nullopt);
  EXPECT_EQ(parse_cpu_list("-1"), std::nullopt);
  EXPECT_EQ(parse_cpu_list("0-99999999"), std::nullopt);
}

// A fake /sys/devices/system/cpu in a temporary directory.
class fake_sysfs {
 public:
  fake_sysfs() {
    std::string pattern = (std::filesystem::temp_directory_path() / "weft-sysfs-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::system_error(errno, std::generic_category());
    dir_ = pattern;
  }
  ~fake_sysfs() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  fake_sysfs(const fake_sysfs&) = delete;
  fake_sysfs& operator=(const fake_sysfs&) = delete;

  void write(int cpu, const std::string& file, const std::string& text) const {
    const std::filesystem::path topology = dir_ / ("cpu" + std::to_string(cpu)) / "topology";
    std::filesystem::create_directories(topology);
    std::ofstream{topology / file} << text;
  }
  [[nodiscard]] std::string path() const { return dir_.string(); }

 private:
  std::filesystem::path dir_;
};

TEST(topology, one_per_core_keeps_the_first_allowed_cpu_of_each_core) {
  // 4 cores with 2 threads each, numbered as Linux does on x86: cpu c and
  // cpu c + 4 share a core.
  const fake_sysfs sysfs;
  for (int cpu = 0; cpu < 8; ++cpu) {
    const int core = cpu % 4;
    sysfs.write(cpu, "core_cpus_list",
                std::to_string(core) + "," + std::to_string(core + 4) + "\n");
  }
  using weft::detail::one_per_core;
  EXPECT_EQ(one_per_core({0, 1, 2, 3, 4, 5, 6, 7}, sysfs.path()), (std::vector<int>{0, 1, 2, 3}));
  // Restricted to the mask: cpu 5 is the first allowed of core 1, and core
  // 0's cpu 4 is allowed alone.
  EXPECT_EQ(one_per_core({1, 4, 5}, sysfs.path()), (std::vector<int>{1, 4}));
  EXPECT_EQ(one_per_core({4, 5, 6, 7}, sysfs.path()), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(one_per_core({}, sysfs.path()), std::vector<int>{});
}

TEST(topology, one_per_core_falls_back_to_thread_siblings_then_to_the_mask) {
  const fake_sysfs sysfs;
  // Before Linux 5.7 only thread_siblings_list exists.
  sysfs.write(0, "thread_siblings_list", "0-1\n");
  sysfs.write(1, "thread_siblings_list", "0-1\n");
  // cpu 2: unreadable topology; cpu 3: none at all.
  sysfs.write(2, "core_cpus_list", "garbage\n");
  using weft::detail::one_per_core;
  EXPECT_EQ(one_per_core({0, 1, 2, 3}, sysfs.path()), (std::vector<int>{0, 2, 3}));
  // No sysfs: every allowed CPU is a core.
  EXPECT_EQ(one_per_core({0, 1, 2}, sysfs.path() + "/absent"), (std::vector<int>{0, 1, 2}));
}

}  // namespace
