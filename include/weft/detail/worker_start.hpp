// How a pool's workers start (pool_options::cpus, threads and
// on_worker_start), how its hooks are called, and the CPU topology behind
// weft::available_parallelism(), weft::allowed_cpus() and
// weft::cpus_one_per_core(). docs/control.md.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::detail {

// A Linux CPU list ("0-3,8,10-11\n", as sysfs writes them) as its CPUs,
// ascending and without repeats; nullopt when `text` is not one.
std::optional<std::vector<int>> parse_cpu_list(std::string_view text);

// The first CPU of `allowed` (ascending) on each physical core, as the
// topology files under `cpu_dir` (normally /sys/devices/system/cpu) group
// them: a CPU whose core_cpus_list (or thread_siblings_list, on kernels
// before 5.7) lists an earlier CPU of `allowed` is left out. A CPU whose
// topology cannot be read counts as a core of its own.
std::vector<int> one_per_core(const std::vector<int>& allowed, const std::string& cpu_dir);

// The CPUs that the cgroup CPU quotas on this process allow, rounded up:
// the least over cgroup v2's cpu.max and cgroup v1's cpu.cfs_quota_us /
// cpu.cfs_period_us (the hierarchy with the cpu controller), of the
// process's cgroup and of each ancestor the mount shows; 0 when none is
// set. The cgroups come from /proc/self/cgroup, where they are mounted from
// /proc/self/mountinfo; `root` is put before every path read, those two
// and the mount points: empty for this system, a fake tree in tests.
std::size_t cgroup_cpu_limit(const std::string& root);

// Pins the calling thread to `cpu` (platform::pin_this_thread); throws
// std::system_error if it fails, naming `what` (the worker and its pool).
void pin_this_thread(int cpu, const std::string& what);

// Calls hook(index) on a worker thread outside its loop (on_worker_start,
// on_worker_stop): outside any job, as on a thread that is not a worker,
// except that this_worker::index() gives `index`.
void call_worker_hook(const std::function<void(std::size_t)>& hook, std::size_t index);

// What a pool's constructor hands its workers to do before their first
// job: pin themselves, then call the start hook, and report back. It lives
// on the constructor's stack; a worker touches it only until it reported.
class worker_start {
 public:
  // Checks the options (usage_error: a CPU this process may not use, cpus
  // with threads = 0) before any worker starts.
  worker_start(const std::optional<std::size_t>& threads, const std::vector<int>& cpus,
               const std::function<void(std::size_t)>& on_start, std::string pool_name);
  worker_start(const worker_start&) = delete;
  worker_start& operator=(const worker_start&) = delete;

  // The pool's worker count: threads if set, else cpus.size() if cpus is
  // set, else available_parallelism().
  [[nodiscard]] std::size_t workers() const noexcept { return workers_; }
  // Whether the workers have anything to do before their loop. If not, the
  // constructor neither hands this to them nor waits for them.
  [[nodiscard]] bool needed() const noexcept {
    return workers_ != 0 && (!cpus_.empty() || on_start_ != nullptr);
  }

  // On worker `index`'s thread: pins it, calls the start hook, and reports
  // to the constructor. False if either failed: the worker must then end
  // without running a job (the constructor will throw).
  bool run(std::size_t index) noexcept;
  // On the constructor's thread: waits until `started` workers have
  // reported, then rethrows the first failure, if any.
  void wait(std::size_t started);

 private:
  std::size_t workers_;
  std::vector<int> cpus_;
  const std::function<void(std::size_t)>& on_start_;
  std::string pool_name_;
  std::mutex mutex_;
  std::condition_variable reported_cv_;
  std::size_t reported_ = 0;  // guarded by mutex_
  std::exception_ptr error_;  // guarded by mutex_: the first failure
};

}  // namespace weft::detail
