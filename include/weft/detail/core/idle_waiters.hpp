// A part of the pool's core (docs/design.md, "The core's parts"): the threads
// that wait for the pool's jobs to finish (wait(), wait_for(), the
// destructor) and how the jobs' runners wake them (docs/waiting.md, "When is
// a pool idle?"). A waiter either blocks on a condition variable or, as a
// worker of another pool with nothing of its own to run, naps on its own
// parker; a runner, after counting a job finished, wakes them all if any
// waits. Both halves of that Dekker pair are here: wake()'s seq_cst load
// after the runner's seq_cst count, and block_until()'s and nap()'s seq_cst
// increment before their waiter's look at the counts. The part also holds
// the hint that asks busy workers to hand their counts over now and then.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

#include "../config.hpp"
#include "../latch.hpp"

namespace weft::detail {

class idle_waiters {
 public:
  idle_waiters() = default;
  idle_waiters(const idle_waiters&) = delete;
  idle_waiters& operator=(const idle_waiters&) = delete;

  // Whether a thread is blocked in a wait (or the destructor), or waits by
  // helping another pool: a worker that never runs out of work (a steady
  // feeder) must then still hand its counts over now and then. Relaxed: a
  // late look only delays the hand-over by a few jobs.
  [[nodiscard]] bool flush_requested() const noexcept {
    return flush_wanted_.load(std::memory_order_relaxed) != 0;
  }
  // A waiter that does not block here (it helps another pool, or waits in
  // wait_until()) asks for the hand-overs while it waits. Relaxed: a hint.
  void want_flush() noexcept { flush_wanted_.fetch_add(1, std::memory_order_relaxed); }
  void unwant_flush() noexcept { flush_wanted_.fetch_sub(1, std::memory_order_relaxed); }

  // After a seq_cst increment of a finished count: wakes the waiters, if
  // any. seq_cst: the increment and this load form a Dekker pair with a
  // waiter's increment below and its look at the counts, so either the
  // waiter sees the jobs finished or this thread sees the waiter.
  void wake() noexcept {
    if (waiters_.load(std::memory_order_seq_cst) != 0) notify();
  }
  // Wakes every blocked and napping waiter. Defined in src/core/dispatch.cpp,
  // beside the worker's loop, which calls it whenever it runs out of work
  // and inlines it.
  void notify();

  // Blocks until done() holds; done() must turn true only through counted
  // jobs finishing (whose runners then call wake()), or be a deadline:
  // the waiter looks again every millisecond regardless, for a worker that
  // never runs out of work hands its counts over without waking anybody.
  template <class Done>
  void block_until(Done& done) {
    std::unique_lock lock{mutex_};
    // seq_cst: see wake().
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    want_flush();
    while (!cv_.wait_for(lock, std::chrono::milliseconds{1}, done)) {
    }
    unwant_flush();
    waiters_.fetch_sub(1, std::memory_order_relaxed);
  }
  // A worker of another pool with nothing of its own to run: naps on its
  // parker `me` for at most d, unless done() holds; notify() unparks it.
  template <class Done>
  void nap(Done& done, parker& me, std::chrono::microseconds d) {
    // In the list, under mutex_, from its construction to its destruction,
    // however the nap ends.
    struct listed {
      idle_waiters& w;
      napper node;
      listed(idle_waiters& owner, parker& p) : w(owner), node{&p, nullptr} {
        const std::lock_guard lock{w.mutex_};
        node.next = w.nappers_;
        w.nappers_ = &node;
        // seq_cst: as block_until()'s, a Dekker pair with wake(): either
        // the look at done() below sees the jobs finished, or their runner
        // sees us and its notify(), which takes the lock after ours,
        // unparks us.
        w.waiters_.fetch_add(1, std::memory_order_seq_cst);
      }
      listed(const listed&) = delete;
      listed& operator=(const listed&) = delete;
      ~listed() {
        const std::lock_guard lock{w.mutex_};
        napper** link = &w.nappers_;
        while (*link != &node) link = &(*link)->next;
        *link = node.next;
        w.waiters_.fetch_sub(1, std::memory_order_relaxed);
      }
    } const listing{*this, me};
    if (!done()) me.park_for(d);
  }

 private:
  // The parkers of the threads in nap(), linked through their stack
  // frames. Guarded by mutex_.
  struct napper {
    parker* to_unpark;
    napper* next;
  };
  // Blocked waiters plus waiters helping another pool (flush_requested()).
  // Read by workers after every job: a line of its own, written rarely.
  alignas(cache_line) std::atomic<std::size_t> flush_wanted_{0};
  // Threads in block_until() or nap(). Guarded for waiting by mutex_.
  alignas(cache_line) std::atomic<std::size_t> waiters_{0};
  std::mutex mutex_;
  std::condition_variable cv_;
  napper* nappers_ = nullptr;
};

}  // namespace weft::detail
