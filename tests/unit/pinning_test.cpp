// pool_options::cpus (docs/control.md, "Pinning workers to CPUs"): worker i
// runs on cpus[i % cpus.size()], checked with platform::current_cpu() and the
// thread's affinity mask; CPUs the process may not use are refused before
// any worker starts; weft::allowed_cpus(), weft::cpus_one_per_core() and
// the cgroup v1 and v2 CPU quotas behind weft::available_parallelism().
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>
#include <weft/detail/fault.hpp>
#include <weft/detail/platform.hpp>
#include <weft/detail/worker_start.hpp>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;

namespace platform = weft::detail::platform;

// The CPUs in the calling thread's affinity mask.
std::vector<int> thread_mask() { return platform::thread_cpus(); }

// One more than the largest CPU number pinning takes (Linux's CPU_SETSIZE).
const int cpu_limit = platform::cpu_limit();

// A CPU number below cpu_limit that this process may not use, if any.
std::optional<int> forbidden_cpu() {
  const std::vector<int> allowed = weft::allowed_cpus();
  for (int cpu = 0; cpu < cpu_limit; ++cpu) {
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
      cpu[index].store(platform::current_cpu());
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
                       const int cpu = platform::current_cpu();
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
  what = construction_error<weft::usage_error>({.cpus = {0, cpu_limit}}, started);
  EXPECT_NE(what.find("cpus[1] = " + std::to_string(cpu_limit) + " is not a CPU number"),
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
    EXPECT_NE(what.find(platform::pin_call()), std::string::npos) << what;
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

// A temporary directory, removed with everything in it at the end.
class temp_tree {
 public:
  temp_tree() {
    // A fresh name (create_directory is false when it exists already).
    std::random_device seed;
    std::mt19937_64 random{(std::uint64_t{seed()} << 32U) | seed()};
    for (;;) {
      dir_ = std::filesystem::temp_directory_path() / ("weft-tree-" + std::to_string(random()));
      if (std::filesystem::create_directory(dir_)) break;
    }
  }
  ~temp_tree() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  temp_tree(const temp_tree&) = delete;
  temp_tree& operator=(const temp_tree&) = delete;

  // Writes `text` to the file at `relative` (e.g. "proc/self/cgroup"),
  // making its directories.
  void write(const std::string& relative, const std::string& text) const {
    const std::filesystem::path file = dir_ / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream{file} << text;
  }
  [[nodiscard]] std::string path() const { return dir_.string(); }

 private:
  std::filesystem::path dir_;
};

// A fake /sys/devices/system/cpu in a temporary directory.
class fake_sysfs {
 public:
  void write(int cpu, const std::string& file, const std::string& text) const {
    tree_.write("cpu" + std::to_string(cpu) + "/topology/" + file, text);
  }
  [[nodiscard]] std::string path() const { return tree_.path(); }

 private:
  temp_tree tree_;
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

// A fake root for weft::detail::cgroup_cpu_limit: /proc/self/cgroup,
// /proc/self/mountinfo and the cgroup files under the mount points.
class fake_cgroups {
 public:
  void cgroup(const std::string& text) const { tree_.write("proc/self/cgroup", text); }
  void mountinfo(const std::string& text) const { tree_.write("proc/self/mountinfo", text); }
  void file(const std::string& path, const std::string& text) const { tree_.write(path, text); }
  // A cgroup v1 cpu controller directory's quota and period.
  void cfs(const std::string& dir, const std::string& quota,
           const std::string& period = "100000") const {
    file(dir + "/cpu.cfs_quota_us", quota + "\n");
    file(dir + "/cpu.cfs_period_us", period + "\n");
  }
  [[nodiscard]] std::size_t limit() const { return weft::detail::cgroup_cpu_limit(tree_.path()); }

 private:
  temp_tree tree_;
};

// A cgroup v1 host (as this one is, and many container hosts): cpu and
// cpuacct mounted together, the unified hierarchy beside them without the
// cpu controller.
constexpr const char* v1_mountinfo =
    "25 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
    "31 25 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:12 - cgroup cgroup rw,cpu,cpuacct\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
constexpr const char* v1_cgroup =
    "4:cpuset:/\n"
    "3:cpu,cpuacct:/user.slice/job\n"
    "1:name=systemd:/user.slice/job\n"
    "0::/user.slice/job\n";

TEST(topology, cgroup_v1_cfs_quota_limits_the_cpus) {
  const fake_cgroups fake;
  fake.cgroup(v1_cgroup);
  fake.mountinfo(v1_mountinfo);
  const std::string cpu = "sys/fs/cgroup/cpu,cpuacct";
  fake.cfs(cpu, "-1");
  fake.cfs(cpu + "/user.slice", "-1");
  fake.cfs(cpu + "/user.slice/job", "-1");
  EXPECT_EQ(fake.limit(), 0U);  // -1: no quota
  // 2.5 CPUs' worth rounds up; the unified hierarchy has no cpu.max here.
  fake.cfs(cpu + "/user.slice/job", "250000");
  EXPECT_EQ(fake.limit(), 3U);
  fake.cfs(cpu + "/user.slice/job", "50000", "200000");
  EXPECT_EQ(fake.limit(), 1U);  // a quarter of a CPU: still one
  // An ancestor's quota applies too, the smallest wins.
  fake.cfs(cpu + "/user.slice/job", "400000");
  fake.cfs(cpu + "/user.slice", "200000");
  EXPECT_EQ(fake.limit(), 2U);
  // The cpuset hierarchy is no cpu controller: its files are not read.
  fake.cfs("sys/fs/cgroup/cpuset", "100000");
  EXPECT_EQ(fake.limit(), 2U);
  // Nor is a quota on the unified hierarchy's mount when it has no cpu.max.
  fake.cfs("sys/fs/cgroup/unified/user.slice/job", "100000");
  EXPECT_EQ(fake.limit(), 2U);
}

TEST(topology, cgroup_v1_cpu_controller_alone_and_in_a_container) {
  const fake_cgroups fake;
  // The cpu controller in a hierarchy of its own, "cpuacct" separate.
  fake.cgroup("3:cpuacct:/a\n2:cpu:/a\n");
  fake.mountinfo(
      "32 31 0:29 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n"
      "33 31 0:30 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n");
  fake.cfs("sys/fs/cgroup/cpuacct/a", "100000");
  EXPECT_EQ(fake.limit(), 0U);
  fake.cfs("sys/fs/cgroup/cpu/a", "300000");
  EXPECT_EQ(fake.limit(), 3U);

  // A container without a cgroup namespace: the mount shows the
  // container's own cgroup (/docker/abc) as its root, the path names it in
  // full.
  fake.cgroup("5:cpu,cpuacct:/docker/abc\n");
  fake.mountinfo(
      "700 650 0:29 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n");
  fake.cfs("sys/fs/cgroup/cpu,cpuacct", "200000");
  EXPECT_EQ(fake.limit(), 2U);
  fake.cgroup("5:cpu,cpuacct:/docker/abc/inner\n");
  fake.cfs("sys/fs/cgroup/cpu,cpuacct/inner", "100000");
  EXPECT_EQ(fake.limit(), 1U);
  // A cgroup outside what the mount shows: nothing to read.
  fake.cgroup("5:cpu,cpuacct:/docker/other\n");
  EXPECT_EQ(fake.limit(), 0U);
  // A mount point with a space, escaped as mountinfo does.
  fake.cgroup("5:cpu:/\n");
  fake.mountinfo("33 31 0:30 / /cg\\040root rw - cgroup cgroup rw,cpu\n");
  fake.cfs("cg root", "700000");
  EXPECT_EQ(fake.limit(), 7U);
}

TEST(topology, cgroup_v2_cpu_max_limits_the_cpus) {
  const fake_cgroups fake;
  fake.cgroup("0::/system.slice/app.service\n");
  fake.mountinfo("29 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
  const std::string root = "sys/fs/cgroup";
  fake.file(root + "/system.slice/app.service/cpu.max", "max 100000\n");
  EXPECT_EQ(fake.limit(), 0U);
  fake.file(root + "/system.slice/app.service/cpu.max", "150000 100000\n");
  EXPECT_EQ(fake.limit(), 2U);
  fake.file(root + "/system.slice/cpu.max", "100000 100000\n");
  EXPECT_EQ(fake.limit(), 1U);  // the parent's is smaller

  // A hybrid host with cgroup v2 mounted elsewhere and a v1 cpu controller
  // too: both count.
  fake.cgroup("2:cpu,cpuacct:/x\n0::/x\n");
  fake.mountinfo(
      "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
      "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
  fake.file(root + "/unified/x/cpu.max", "400000 100000\n");
  EXPECT_EQ(fake.limit(), 4U);
  fake.cfs(root + "/cpu,cpuacct/x", "300000");
  EXPECT_EQ(fake.limit(), 3U);
}

TEST(topology, cgroup_limit_without_cgroups_is_none) {
  const fake_cgroups fake;
  EXPECT_EQ(fake.limit(), 0U);  // no /proc at all
  fake.cgroup("0::/\n");
  EXPECT_EQ(fake.limit(), 0U);  // no mountinfo
  fake.mountinfo("29 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  EXPECT_EQ(fake.limit(), 0U);  // no cpu.max at the root
  fake.file("sys/fs/cgroup/cpu.max", "garbage\n");
  EXPECT_EQ(fake.limit(), 0U);
  fake.file("sys/fs/cgroup/cpu.max", "0 100000\n");
  EXPECT_EQ(fake.limit(), 0U);
}

TEST(topology, available_parallelism_is_the_mask_within_the_cgroup_limit) {
  const std::size_t mask = weft::allowed_cpus().size();
  const std::size_t limit = weft::detail::cgroup_cpu_limit("");
  EXPECT_EQ(weft::available_parallelism(), limit == 0 ? mask : std::min(mask, limit));
}

}  // namespace
