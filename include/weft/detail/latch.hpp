// A one-shot latch whose waiter can block without the setter ever touching the
// latch after the waiter may have returned.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

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

  // notify_one runs under the lock: once the lock is released the parked
  // thread may return and end, so nothing of this object is touched after.
  void unpark() {
    std::lock_guard lock{mutex_};
    permit_ = true;
    cv_.notify_one();
  }

  // The calling thread's own parker; it lives as long as the thread.
  static parker& current() noexcept {
    thread_local parker self;
    return self;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool permit_ = false;
};

// Set once. At most one thread blocks in block() at a time; any number may
// poll is_set(). The owner of the latch may destroy it as soon as is_set()
// returns true or block() returns: set() does not touch the latch after the
// exchange that publishes it, only the waiter's thread-local parker.
class latch {
 public:
  [[nodiscard]] bool is_set() const noexcept {
    // Acquire pairs with the acq_rel exchange in set(): whatever the setter
    // wrote before set() is visible once this returns true.
    return state_.load(std::memory_order_acquire) == set_state();
  }

  void set() noexcept {
    // acq_rel: release publishes the setter's writes to is_set()/block();
    // acquire pairs with the compare_exchange in block() so the parker
    // pointer read here is the one the waiter stored.
    parker* const old = state_.exchange(set_state(), std::memory_order_acq_rel);
    if (old != nullptr && old != set_state()) old->unpark();
  }

  // Blocks the calling thread until set(). Spinning first is the caller's job.
  void block() {
    parker& self = parker::current();
    parker* expected = nullptr;
    // acq_rel on success: release hands the parker pointer to set()'s
    // exchange; acquire on failure pairs with set()'s exchange when the latch
    // was set meanwhile.
    if (state_.compare_exchange_strong(expected, &self, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
      // set() read our pointer and unparks us exactly once. Every unpark of
      // a parker is awaited by exactly one park() (this one, or the one in
      // task_group's wait), so no stale permit exists and this returns only
      // after set() is done with us.
      self.park();
      return;
    }
    // Either set already, or another thread is blocked here (a usage error
    // the public types prevent); in the latter case fall back to polling.
    while (!is_set()) std::this_thread::yield();
  }

 private:
  // The latch's own address marks it as set: it is never a parker's address,
  // and it is never dereferenced as one.
  [[nodiscard]] parker* set_state() const noexcept {
    return reinterpret_cast<parker*>(const_cast<latch*>(this));
  }
  // nullptr (unset), set_state(), or the blocked waiter's parker.
  std::atomic<parker*> state_{nullptr};
};

}  // namespace weft::detail
