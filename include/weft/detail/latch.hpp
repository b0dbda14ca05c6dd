// A one-shot latch whose waiter can block without the setter ever touching the
// latch after the waiter may have returned.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "weft/detail/platform.hpp"

namespace weft::detail {

// A binary permit owned by one thread (like LockSupport.park in Java). park()
// returns once unpark() has been called since the last park(); a permit
// granted while nobody is parked is kept for the next park(). weft's users of
// it keep one rule: a thread parks only after publishing its parker to
// exactly one unparker, which unparks it exactly once, so no permit is ever
// left over.
class parker {
 public:
  void park() {
    std::unique_lock lock{mutex_};
    cv_.wait(lock, [this] { return permit_; });
    permit_ = false;
  }

  // park() for at most `d`; returns early once unparked. The one user that
  // breaks the rule above: a worker napping in a wait (worker::nap) may wake
  // at the deadline just before its unparker's unpark(), which then leaves a
  // permit; the next nap returns at once and its wait looks again, which
  // costs one round of that wait's loop.
  void park_for(std::chrono::microseconds d) {
    std::unique_lock lock{mutex_};
    cv_.wait_for(lock, d, [this] { return permit_; });
    permit_ = false;
  }

  // notify_one runs under the lock: once the lock is released the parked
  // thread may return and end, so nothing of this object is touched after.
  void unpark() {
    std::lock_guard lock{mutex_};
    permit_ = true;
    cv_.notify_one();
  }

  // The calling thread's own parker; it lives as long as the thread.
  // (platform::per_thread: its mutex outlives MinGW's emulated TLS.)
  static parker& current() { return platform::per_thread<parker>(); }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool permit_ = false;
};

// Something to tell when a latch is set: a blocked thread (block()), or a
// front end's continuation (weft::after in a flow). notify() runs on the
// setting thread; it may end the waiter's life, so set() reads `next` first.
struct latch_waiter {
  void (*notify)(latch_waiter*) noexcept = nullptr;
  latch_waiter* next = nullptr;
};

// Set once. Any number of threads may poll is_set(), block in block(), or
// subscribe a waiter. The owner of the latch may destroy it as soon as
// is_set() returns true or block() returns: set() does not touch the latch
// after the exchange that publishes it, only the waiters it took.
class latch {
 public:
  [[nodiscard]] bool is_set() const noexcept {
    // Acquire pairs with the acq_rel exchange in set(): whatever the setter
    // wrote before set() is visible once this returns true.
    return state_.load(std::memory_order_acquire) == set_state();
  }

  // is_set() for a waiter that has just published a visit of the latch's
  // pool (visit_scope). seq_cst: the other half of that Dekker pair, with
  // set()'s seq_cst exchange.
  [[nodiscard]] bool is_set_now() const noexcept {
    return state_.load(std::memory_order_seq_cst) == set_state();
  }

  void set() noexcept {
    // Release publishes the setter's writes to is_set()/block() and the
    // waiters; acquire pairs with subscribe()'s compare_exchange, so the
    // waiters read here are the ones subscribed. seq_cst: see is_set_now()
    // (the setter's count of its job as finished comes after this, and the
    // pool's destructor reads that count before the visit slots).
    latch_waiter* w = state_.exchange(set_state(), std::memory_order_seq_cst);
    if (w == set_state()) return;
    while (w != nullptr) {
      latch_waiter* const next = w->next;
      w->notify(w);
      w = next;
    }
  }

  // Adds w to the waiters set() notifies; false (and w untouched by the
  // latch) if the latch is set already.
  bool subscribe(latch_waiter* w) noexcept {
    latch_waiter* head = state_.load(std::memory_order_acquire);
    do {
      if (head == set_state()) return false;
      w->next = head;
      // Release hands w (and its next) to set()'s exchange; acquire on
      // failure pairs with set()'s exchange when the latch was set meanwhile.
    } while (!state_.compare_exchange_weak(head, w, std::memory_order_release,
                                           std::memory_order_acquire));
    return true;
  }

  // Blocks the calling thread until set() or the deadline; true if set. The
  // waiter it subscribes lives on the heap (the latch notifies it after we
  // may have timed out) and is reused by the thread's next timed wait on
  // this latch, so a loop of timed waits does not grow the latch's list.
  bool block_until(std::chrono::steady_clock::time_point deadline);

  // block_until() for a thread that runs jobs while it waits (a worker's
  // nap between its looks for jobs); if no waiter can be allocated, it
  // sleeps until the deadline instead.
  void nap_until(std::chrono::steady_clock::time_point deadline) noexcept;

  // Blocks the calling thread until set(). Spinning first is the caller's job.
  void block() {
    struct parked final : latch_waiter {
      parker* p;
    } self;
    self.p = &parker::current();
    self.notify = [](latch_waiter* w) noexcept { static_cast<parked*>(w)->p->unpark(); };
    // set() unparks us exactly once after subscribe() succeeds. Every unpark
    // of a parker is awaited by exactly one park() (this one, or the one in
    // task_group's wait), so no stale permit exists and this returns only
    // after set() is done with `self`.
    if (subscribe(&self)) self.p->park();
  }

 private:
  // The latch's own address marks it as set: it is never a waiter's address,
  // and it is never dereferenced as one.
  [[nodiscard]] latch_waiter* set_state() const noexcept {
    return reinterpret_cast<latch_waiter*>(const_cast<latch*>(this));
  }
  // nullptr (unset, nobody waiting), set_state(), or the newest waiter,
  // linked to the older ones.
  std::atomic<latch_waiter*> state_{nullptr};
};

}  // namespace weft::detail
