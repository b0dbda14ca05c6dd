// What a weft::coro awaits besides other coros: a weft::future, and the
// pool's timers (weft::sleep_for / sleep_until). Each suspends the coroutine
// without holding a thread, and resumes it as a job of its start's pool
// (docs/coroutines.md, "Where a coroutine runs").
#pragma once

#include <atomic>
#include <chrono>
#include <coroutine>
#include <utility>

#include "../errors.hpp"
#include "../future.hpp"
#include "clock.hpp"
#include "coro_promise.hpp"
#include "latch.hpp"
#include "scheduler.hpp"

namespace weft::detail {

// Queues r, a suspended coroutine's resumption, on its start's pool, from a
// thread that nothing else keeps the pool alive for (one that set a future:
// publish_guarded). The coroutine's unit of work keeps the pool from being
// destroyed until it has finished, but not a publisher's last touch of it.
// If no queue takes it (the pool's destruction has begun, or memory ran
// out), the coroutine resumes on this thread.
inline void coro_resume_later(coro_resume& r, bool guarded) noexcept {
  job* j = &r;
  pool& p = *r.root->owner;
  const std::size_t queued =
      guarded ? scheduler::publish_guarded(p, &j, 1) : scheduler::publish(p, &j, 1);
  if (queued == 0) coro_resume::resume_here(j);
}

// co_await of a weft::future<U>: ready futures do not suspend; otherwise the
// awaiter subscribes to the future's latch, whose set() queues the
// coroutine's resumption on its own pool (any thread may set it).
template <class U>
class coro_future_awaiter : latch_waiter, coro_resume {
 public:
  explicit coro_future_awaiter(future<U>& f) : f_(f) {
    if (!f.valid()) {
      throw usage_error(
          "weft::coro: co_await of an empty weft::future (default-constructed, moved from, or "
          "its get() was already called)");
    }
  }
  [[nodiscard]] bool await_ready() const noexcept { return f_.ready(); }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) noexcept {
    arm(h, "coro after future");
    this->notify = &notified;
    // false: set meanwhile, resume at once. After a successful subscribe
    // the coroutine may already be resuming elsewhere: nothing of *this is
    // touched again here.
    return future_access::state(f_)->done.subscribe(this);
  }
  U await_resume() { return f_.get(); }

 private:
  static void notified(latch_waiter* w) noexcept {
    coro_resume_later(*static_cast<coro_future_awaiter*>(w), true);
  }
  future<U>& f_;
};

// co_await weft::sleep_until(t): a one-shot timer of the start's pool whose
// run resumes the coroutine (on the worker that runs the timer's job). If
// the pool's destruction cancels the timer, the coroutine resumes with
// job_cancelled instead. A timer may fire, or be destroyed, before
// await_suspend() is done with spawn_at(): `gate` decides who resumes (the
// first of the two to exchange it lets the second one do it).
class coro_sleep_awaiter : coro_resume {
 public:
  explicit coro_sleep_awaiter(std::chrono::steady_clock::time_point due) noexcept : due_(due) {}
  // Moved only before it is awaited (a compiler may move the awaitable
  // into the frame).
  coro_sleep_awaiter(coro_sleep_awaiter&& other) noexcept : coro_resume(), due_(other.due_) {}
  coro_sleep_awaiter(const coro_sleep_awaiter&) = delete;
  coro_sleep_awaiter& operator=(const coro_sleep_awaiter&) = delete;
  coro_sleep_awaiter& operator=(coro_sleep_awaiter&&) = delete;
  ~coro_sleep_awaiter() = default;
  [[nodiscard]] bool await_ready() const noexcept {
    return due_ <= std::chrono::steady_clock::now();
  }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    arm(h, "coro after sleep");
    // If this throws, no timer is left: a callable it made and destroyed
    // found the gate open and left the resumption to us, and the exception
    // resumes the coroutine at once (the await throws it).
    root->owner->spawn_at(due_, fire{this});
    // acq_rel pairs with the exchange in fire::resume(): whichever comes
    // second sees the other's writes (cancelled_) and resumes.
    return !gate_.exchange(true, std::memory_order_acq_rel);
  }
  void await_resume() const {
    if (cancelled_) {
      throw job_cancelled(
          "weft::sleep_for/sleep_until: the pool's destruction cancelled the timer this "
          "coroutine slept on");
    }
  }

 private:
  // The timer's callable: resumes the coroutine when it runs, or, destroyed
  // without running (the pool's destruction stopped the timers), resumes
  // it cancelled. Only the copy the timer holds (moved to) acts.
  struct fire {
    coro_sleep_awaiter* a;
    explicit fire(coro_sleep_awaiter* to) noexcept : a(to) {}
    fire(fire&& o) noexcept : a(std::exchange(o.a, nullptr)) {}
    fire(const fire&) = delete;
    fire& operator=(const fire&) = delete;
    fire& operator=(fire&&) = delete;
    ~fire() {
      if (coro_sleep_awaiter* const to = std::exchange(a, nullptr); to != nullptr) {
        to->cancelled_ = true;
        resume(to, false);
      }
    }
    void operator()() noexcept { resume(std::exchange(a, nullptr), true); }
    static void resume(coro_sleep_awaiter* to, bool on_pool) noexcept {
      // acq_rel: see await_suspend().
      if (!to->gate_.exchange(true, std::memory_order_acq_rel)) return;  // it resumes itself
      if (on_pool) {
        coro_resume::resume_here(to);  // the timer's job, on the pool: resume here
      } else {
        // The destroying thread (the pool's destructor) keeps the pool alive.
        coro_resume_later(*to, false);
      }
    }
  };

  std::chrono::steady_clock::time_point due_;
  std::atomic<bool> gate_{false};
  bool cancelled_ = false;
};

}  // namespace weft::detail

namespace weft {

/// Inside a weft::coro, `co_await weft::sleep_until(t)` suspends the
/// coroutine until `t` (any clock, converted as pool::spawn_at converts it)
/// on its pool's timers: no worker and no thread is held meanwhile, and it
/// resumes on the worker that runs the timer's job. A time that has come
/// does not suspend. If the pool's destruction cancels the timer (the
/// destructor stops timers that have not fired), the await throws
/// job_cancelled. Throws usage_error for a NaN time.
template <class Clock, class Duration>
[[nodiscard]] detail::coro_sleep_awaiter sleep_until(
    const std::chrono::time_point<Clock, Duration>& t) {
  return detail::coro_sleep_awaiter{detail::steady_deadline(t, "weft::sleep_until")};
}

/// sleep_until(now + d), d converted as pool::spawn_after converts it.
template <class Rep, class Period>
[[nodiscard]] detail::coro_sleep_awaiter sleep_for(const std::chrono::duration<Rep, Period>& d) {
  return detail::coro_sleep_awaiter{detail::deadline_after(d, "weft::sleep_for")};
}

}  // namespace weft
