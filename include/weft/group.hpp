// weft::task_group: structured parallelism with cancellation.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <type_traits>
#include <utility>

#include "detail/latch.hpp"
#include "pool.hpp"

namespace weft {

/// Jobs spawned into a group run on its pool; wait() returns when all of them
/// have finished. The first exception cancels the group: jobs that have not
/// started yet are skipped, and wait() rethrows that exception. After wait()
/// the group is fresh again (not cancelled, no error) and can be reused.
/// Groups nest: a job may create its own group and wait for it, on any pool.
/// The destructor waits; an exception nobody collected with wait() then goes
/// to the pool's error path (pool_options::on_error or pool::wait()).
class task_group {
 public:
  /// An empty group whose jobs run on p.
  explicit task_group(pool& p) noexcept : pool_(p) {}
  task_group(const task_group&) = delete;
  task_group& operator=(const task_group&) = delete;
  ~task_group();

  /// Runs f() on the group's pool as a job of this group; skipped if the
  /// group is cancelled before it starts. Throws as pool::spawn does.
  template <class F>
  void spawn(F&& f) {
    // Relaxed: the count only has to be exact; what the job needs is
    // published by the queue push inside post().
    state_.fetch_add(one_job, std::memory_order_relaxed);
    try {
      pool_.post<member_call<std::decay_t<F>>>(this, std::forward<F>(f));
    } catch (...) {
      finish();
      throw;
    }
  }

  /// Waits for every job spawned so far; on a worker it runs other jobs
  /// meanwhile. Rethrows the first exception a job threw.
  void wait();

  /// Jobs of this group that have not started will not run. Running ones
  /// finish (they can poll is_cancelled()).
  void cancel() noexcept { cancelled_.store(true, std::memory_order_relaxed); }
  /// True after cancel() or a job's exception, until wait() returns.
  [[nodiscard]] bool is_cancelled() const noexcept {
    return cancelled_.load(std::memory_order_relaxed);
  }

  /// The pool the group's jobs run on.
  [[nodiscard]] pool& owner() const noexcept { return pool_; }

 private:
  // Runs after the job's callable was destroyed: counts the job off its
  // group, the group's last touch.
  struct finish_epilogue {
    task_group* group;
    void operator()() const noexcept { group->finish(); }
  };

  template <class F>
  struct member_call {
    task_group* group;
    F fn;
    pool* owner;

    member_call(task_group* g, F&& f) : group(g), fn(std::move(f)), owner(&g->pool_) {}
    member_call(task_group* g, const F& f) : group(g), fn(f), owner(&g->pool_) {}

    // pool::purge() may drop it: the group then fails with job_cancelled.
    static constexpr bool cancellable = true;
    finish_epilogue cancel() noexcept {
      group->fail(detail::cancelled_error());
      return {group};
    }

    finish_epilogue operator()() noexcept {
      if (!group->is_cancelled()) {
        try {
          fn();
        } catch (...) {
          group->fail(std::current_exception());
        }
      }
      return {group};
    }
  };

  void fail(std::exception_ptr error) noexcept;
  void finish() noexcept;
  [[nodiscard]] bool idle() const noexcept {
    // Acquire pairs with the acq_rel decrement in finish(): the jobs' writes
    // are visible to whoever saw the count reach zero.
    return (state_.load(std::memory_order_acquire) & count_mask) == 0;
  }
  void wait_idle();

  // Bit 0: a thread is blocked in wait_idle() and waiter_ names its parker.
  // The rest: jobs spawned and not finished, in units of one_job.
  static constexpr std::uint64_t waiter_bit = 1;
  static constexpr std::uint64_t one_job = 2;
  static constexpr std::uint64_t count_mask = ~waiter_bit;

  pool& pool_;
  std::atomic<std::uint64_t> state_{0};
  detail::parker* waiter_ = nullptr;  // written before waiter_bit is set, read by finish()
  std::atomic<bool> cancelled_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;  // guarded by error_mutex_
};

}  // namespace weft
