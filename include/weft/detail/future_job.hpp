// A submitted callable's job, which is its future's state (future_job), and
// the waits of weft::future: a front end of the pool, through the scheduler's
// door. Included by weft/pool.hpp after the doors.
#pragma once

#include <chrono>
#include <exception>
#include <future>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "../errors.hpp"
#include "../future.hpp"
#include "context.hpp"
#include "job.hpp"
#include "scheduler.hpp"

namespace weft {

namespace detail {

// The exception a dropped job's future holds (job_cancelled; std::bad_alloc's
// if there is no memory for that).
std::exception_ptr cancelled_error() noexcept;

template <class R, class F>
struct future_job final : future_state<R> {
  template <class G>
  future_job(pool* owner, G&& g) {
    fn.emplace(std::forward<G>(g));
    this->run = &run_job;
    this->flags = scheduler::cancellable_flags();
    this->owner = owner;
    this->owner_life = scheduler::life(*owner);
    this->destroy = &destroy_job;
  }

  static void run_job(job* base) noexcept {
    auto* self = static_cast<future_job*>(base);
    pool* owner = self->owner;
    job_cache& counted = *self->counted;
    const unsigned epoch = self->epoch;
    // Dropped before it started (purge(), weft::job): the future throws.
    const bool dropped = scheduler::cancelled_at_start(*owner, self);
    if (dropped) [[unlikely]] {
      self->error = cancelled_error();
      self->fn.reset();
    } else {
      // Marked with the state, so that future::wait() recognises a wait
      // for it from inside it.
      const running_scope running{owner, epoch, static_cast<future_state<R>*>(self)};
      try {
        // NOLINTBEGIN(bugprone-unchecked-optional-access): engaged until here
        if constexpr (std::is_void_v<R>) {
          (*self->fn)();
          self->value.emplace();
        } else {
          self->value.emplace((*self->fn)());
        }
        // NOLINTEND(bugprone-unchecked-optional-access)
      } catch (...) {
        self->error = std::current_exception();
      }
      // The callable and its captures go before the future can see the
      // result, so their destructors never run after get() returned.
      self->fn.reset();
    }
    // Once the latch is set the future may take the result and go away. If
    // our release is the last one, the future was dropped unread: its
    // exception then goes to the pool's error path.
    self->done.set();
    if (self->drop()) {
      // Nobody wanted the result of a dropped job: no error either.
      if (self->error && !dropped) scheduler::report_error(*owner, self->error);
      destroy_job(self);
    }
    // Last: the pool may be destroyed once the job counts as finished.
    scheduler::count_job_finished(*owner, counted, epoch);
  }

  // Whoever lets go of the state last, on any thread (also after the pool
  // is gone: the slab outlives it as long as it has blocks out).
  static void destroy_job(future_state<R>* s) noexcept {
    auto* self = static_cast<future_job*>(s);
    state_slab* const from = self->slab;
    if (from == nullptr) {
      delete self;
      return;
    }
    void* const memory = self;
    self->~future_job();
    release_state_block(from, std::launder(static_cast<state_block*>(memory)));
  }

  state_slab* slab = nullptr;  // where the state's block came from; nullptr: new
  std::optional<F> fn;         // reset once it has run
};

}  // namespace detail

template <class R>
void future<R>::wait() const {
  if (state_ == nullptr) {
    throw usage_error(
        "weft::future::wait/get: the future is empty (default-constructed, moved from, or its "
        "get() was already called); keep the future returned by pool::submit and call get() once");
  }
  if (!state_->done.is_set()) {
    if (detail::waits_for_itself(state_)) {
      throw usage_error(
          "weft::future::wait/get: called from inside the work this future stands for (its own "
          "job, or a task of the graph whose run it is), which could then never finish; wait for "
          "it from outside that work");
    }
    detail::scheduler::await(*state_->owner, state_->done);
  }
}

template <class R>
std::future_status future<R>::wait_until_steady(
    std::chrono::steady_clock::time_point deadline) const {
  if (state_ == nullptr) {
    throw usage_error(
        "weft::future::wait_for/wait_until: the future is empty (default-constructed, moved "
        "from, or its get() was already called); keep the future returned by pool::submit");
  }
  if (state_->done.is_set()) return std::future_status::ready;
  if (std::chrono::steady_clock::now() >= deadline) return std::future_status::timeout;
  return detail::scheduler::await_until(*state_->owner, state_->done, deadline)
             ? std::future_status::ready
             : std::future_status::timeout;
}

}  // namespace weft
