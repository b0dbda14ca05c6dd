// weft::coro: coroutine tasks on a weft pool (docs/coroutines.md). This
// header starts them: weft::submit, weft::spawn, weft::sync_wait.
#pragma once

#include <coroutine>
#include <exception>
#include <string>
#include <utility>

#include "detail/context.hpp"
#include "detail/coro_await.hpp"
#include "detail/coro_flow.hpp"
#include "detail/coro_join.hpp"
#include "detail/coro_promise.hpp"
#include "detail/scheduler.hpp"
#include "errors.hpp"
#include "future.hpp"
#include "pool.hpp"

namespace weft {
namespace detail {

// One start of a coro: the future's state, the job that first resumes the
// coroutine, and the coro_root its coroutines share. Counted as one unit of
// work of the pool (scheduler::enter) from the start until the root
// coroutine finishes, however long it stays suspended: pool.wait() and the
// destructor wait for it. A spawn has no future: refs starts at 1.
template <class T>
struct coro_start final : future_state<T> {
  coro_root root;
  coro_result<T> result;
  std::coroutine_handle<coro_promise<T>> h;

  coro_start(pool& p, unsigned epoch, coro<T>& c) noexcept : h(coro_access::release(c)) {
    root.owner = &p;
    root.epoch = epoch;
    this->epoch = epoch;
    this->owner = &p;
    this->owner_life = scheduler::life(p);
    this->run = &start;
    this->destroy = &destroy_start;
    this->cancel = &cancel_start;
    coro_promise<T>& pr = h.promise();
    pr.root_ = &root;
    pr.done_ = &finish;
    pr.done_arg_ = this;
    pr.result_ = &result;
  }

  static void start(job* j) noexcept {
    auto* self = static_cast<coro_start*>(static_cast<future_state<T>*>(j));
    const running_scope running{self->root.owner, self->root.epoch,
                                static_cast<future_state<T>*>(self)};
    const std::coroutine_handle<> h = self->h;
    if (current_trace != nullptr) [[unlikely]] {
      coro_resume::traced_resume(h, "coro start");  // a traced pool's job
      return;
    }
    coro_drive(h);  // may finish the start, and free *self
  }

  // The root coroutine has finished (its final suspension point).
  static void finish(void* arg) noexcept {
    auto* self = static_cast<coro_start*>(arg);
    pool& p = *self->root.owner;
    const unsigned epoch = self->root.epoch;
    coro_result<T>& r = self->result;
    if (r.error) {
      self->error = std::move(r.error);
    } else if constexpr (std::is_void_v<T>) {
      self->value.emplace();
    } else {
      try {
        // NOLINTNEXTLINE(bugprone-unchecked-optional-access): set unless it threw
        self->value.emplace(std::move(*r.value));
      } catch (...) {
        self->error = std::current_exception();
      }
    }
    // The frame (and the locals its destructors free) goes before the
    // future can see the result, as a job's callable does.
    std::exchange(self->h, nullptr).destroy();
    self->done.set();
    if (self->drop()) {
      // Nobody will read it: a spawn (which holds the only reference), or
      // a submit whose future was dropped.
      if (self->error) scheduler::report_error(p, self->error);
      destroy_start(self);
    }
    scheduler::leave(p, epoch);  // last: p may go once the unit has left
  }

  static bool cancel_start(future_state<T>* s) noexcept {
    auto* self = static_cast<coro_start*>(s);
    if (self->done.is_set()) return false;
    // Relaxed: see coro_root::stop.
    self->root.stop.store(true, std::memory_order_relaxed);
    return true;
  }

  static void destroy_start(future_state<T>* s) noexcept {
    auto* self = static_cast<coro_start*>(s);
    if (self->h) self->h.destroy();  // never started (the publication failed)
    delete self;
  }
};

template <class T>
coro_start<T>* start_coro(pool& p, coro<T>& c, bool detached, const char* who) {
  if (!c.valid()) {
    throw usage_error(std::string(who) +
                      ": the coro is empty or finished (moved from, or already started or "
                      "awaited); start each coro once");
  }
  const scheduler::unit u = scheduler::enter(p);  // pool_closed once p closes
  struct ender {
    pool& p;
    const scheduler::unit& u;
    ender(pool& owner, const scheduler::unit& unit) noexcept : p(owner), u(unit) {}
    ender(const ender&) = delete;
    ender& operator=(const ender&) = delete;
    ~ender() { scheduler::end_submission(p, u); }  // last: our last touch of p
  } const guard{p, u};
  coro_start<T>* s = nullptr;
  try {
    s = new coro_start<T>(p, u.epoch(), c);
  } catch (...) {
    scheduler::leave(p, u.epoch());
    throw;
  }
  if (detached) {
    s->refs.store(1, std::memory_order_relaxed);  // published to the worker by the queue
  }
  job* j = s;
  // Held by the future (or detached) from here: the start may finish, and
  // a spawn's state vanish, as soon as it is queued.
  coro_start<T>* const result = detached ? nullptr : s;
  if (scheduler::publish(p, &j, 1) == 0) coro_start<T>::start(j);  // no queue took it
  return result;
}

}  // namespace detail

/// Starts coroutine c on pool p and returns the future of its result (or
/// exception). The coroutine first runs as a job of p, and after every
/// suspension resumes as a job of p (docs/coroutines.md, "Where a coroutine
/// runs"); while it is suspended it holds no worker and no thread, but it
/// counts as work: p.wait() and p's destructor wait for it. The future's
/// cancel() asks it to stop: its next co_await throws job_cancelled. Throws
/// usage_error for an empty or started coro, pool_closed once p's
/// destruction has begun (unless called from one of p's jobs).
template <class T>
[[nodiscard]] future<T> submit(pool& p, coro<T> c) {
  return detail::future_access::make(detail::start_coro(p, c, false, "weft::submit"));
}

/// Starts c on p and forgets it, as pool::spawn does a job: its exception
/// goes to pool_options::on_error, or is rethrown by a later p.wait().
/// Throws as submit(p, c) does.
template <class T>
void spawn(pool& p, coro<T> c) {
  (void)detail::start_coro(p, c, true, "weft::spawn");
}

/// Starts c on p and waits for its result: submit(p, c).get(). From any
/// thread: a worker runs other jobs meanwhile, any other thread blocks (or,
/// for a sequential pool, runs p's jobs).
template <class T>
T sync_wait(pool& p, coro<T> c) {
  return submit(p, std::move(c)).get();
}

}  // namespace weft
