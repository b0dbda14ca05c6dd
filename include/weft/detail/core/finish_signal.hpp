// A part of the pool's core (docs/design.md, "The core's parts"): how a
// thread that waits for a predicate without being one of the pool's workers
// (pool::wait_until outside the pool, or napping on a worker with nothing to
// run, docs/waiting.md "wait_until") learns that a job has finished, since a
// predicate notifies nobody. Both halves of its Dekker pair are here: the
// worker's signal() after a job, and the waiter's epoch() then park_until().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "../config.hpp"

namespace weft::detail {

class finish_signal {
 public:
  // A waiter registers before it first parks and leaves when its wait ends.
  // Relaxed: a worker that looks for waiters just before the registration
  // does not signal its job, so a waiter's first park is short (the callers
  // bound it); the jobs that finish after it are signalled.
  void enlist() noexcept { waiters_.fetch_add(1, std::memory_order_relaxed); }
  void leave() noexcept { waiters_.fetch_sub(1, std::memory_order_relaxed); }

  // After a job, while any waiter is registered: moves the epoch on and
  // wakes the parked waiters, which then re-check their predicates.
  void signal() noexcept {
    // Relaxed: a waiter that registers as we look is woken by its own
    // timeout at worst (docs/waiting.md, "wait_until").
    if (waiters_.load(std::memory_order_relaxed) == 0) return;
    // seq_cst: a Dekker pair with park_until(): either the waiter sees the
    // new epoch, or we see it parked. Its release half makes the job's
    // effects visible to a waiter that reads this epoch (pairs with the
    // seq_cst load in epoch()).
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    if (parked_.load(std::memory_order_seq_cst) != 0) {
      // Under the lock: orders us against a waiter between its check of the
      // epoch and its wait.
      { std::lock_guard lock{mutex_}; }
      cv_.notify_all();
    }
  }

  // The waiter reads the epoch before it checks its predicate, so that a
  // job that finishes after the check moves it on and park_until() returns
  // at once. seq_cst: pairs with signal()'s increment.
  [[nodiscard]] std::uint64_t epoch() const noexcept {
    return epoch_.load(std::memory_order_seq_cst);
  }
  // Sleeps until a job finishes after the caller read `seen` from epoch(),
  // or `timeout` passes; true if one did.
  bool park_until(std::uint64_t seen, std::chrono::microseconds timeout);

 private:
  // Registered waiters. Read by the workers after every job: a line of its
  // own.
  alignas(cache_line) std::atomic<std::size_t> waiters_{0};
  std::atomic<std::uint64_t> epoch_{0};  // jobs signalled so far
  std::atomic<std::size_t> parked_{0};   // waiters in park_until()
  std::mutex mutex_;
  std::condition_variable cv_;
};

}  // namespace weft::detail
