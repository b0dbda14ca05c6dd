// Timers: pool::spawn_after, spawn_at and spawn_every run a callable on the
// pool once a deadline has passed, and return a weft::timer that can cancel
// it (docs/control.md, "Timers"). One timer thread per pool, started by its
// first timer, sleeps until the earliest deadline and then hands the job to
// the workers; nothing spins or polls. The machinery lives in src/timer.cpp
// and reaches the pool through detail::scheduler.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "detail/clock.hpp"
#include "errors.hpp"
#include "future.hpp"
#include "pool.hpp"

namespace weft {

class timer;

namespace detail {

class timer_service;

// One timer: its state word, its deadline and its callable. Shared by the
// handle (weft::timer), the timer queue while it waits, and the job that
// runs it once it fires. Whoever holds the timer's turn (the queue, or the
// fired job) is the only one that runs or destroys the callable.
struct timer_state {
  using clock = std::chrono::steady_clock;
  static constexpr std::size_t not_queued = static_cast<std::size_t>(-1);
  // status bits. cancelled: it never starts again (cancel(), an exception
  // of a periodic run, the pool's destruction). started: a one-shot timer's
  // run has begun.
  static constexpr std::uint32_t cancelled = 1;
  static constexpr std::uint32_t started = 2;

  explicit timer_state(clock::duration every) noexcept : period(every) {}
  timer_state(const timer_state&) = delete;
  timer_state& operator=(const timer_state&) = delete;
  virtual ~timer_state() = default;

  // Calls the callable (it must still be there); `self` is this state.
  virtual void invoke(const std::shared_ptr<timer_state>& self) = 0;
  // Destroys the callable, once, by the holder of the timer's turn.
  virtual void destroy_callable() noexcept = 0;

  // Relaxed everywhere: the decisions depend only on the order of the
  // read-modify-writes of this one word (cancel's fetch_or against a
  // one-shot run's fetch_or), which every atomic access respects; the
  // callable and the deadline are handed over by the timer queue's mutex
  // and by the pool's queues (src/timer.cpp).
  std::atomic<std::uint32_t> status{0};
  const clock::duration period;  // zero: one-shot
  // Guarded by the service's mutex.
  clock::time_point due{};
  std::uint64_t sequence = 0;  // ties between equal deadlines: first made, first fired
  std::size_t heap_index = not_queued;
  // Set before the timer is queued; keeps the service (its mutex) alive for
  // cancel() after the pool is gone.
  std::shared_ptr<timer_service> service;
};

// A timer's callable: f() or f(timer&), kept in place until destroyed.
template <class F>
struct timer_box final : timer_state {
  template <class G>
  timer_box(clock::duration every, G&& g) : timer_state(every) {
    fn.emplace(std::forward<G>(g));
  }
  void invoke(const std::shared_ptr<timer_state>& self) override;
  void destroy_callable() noexcept override { fn.reset(); }
  std::optional<F> fn;
};

// src/timer.cpp: queues s on p's timer thread for deadline `due` and
// returns its handle. Throws pool_closed (like spawn) once p's destruction
// has begun, unless called from one of p's jobs; then the timer is
// returned cancelled and never runs.
timer schedule_timer(pool& p, const std::shared_ptr<timer_state>& s,
                     std::chrono::steady_clock::time_point due);

// A period as the steady clock's duration (rounded up, at least one tick,
// saturated: one too long to represent is duration::max(), whose first
// deadline, time_point::max(), never comes); usage_error unless positive
// (NaN has its own message).
template <class Rep, class Period>
std::chrono::steady_clock::duration timer_period(const std::chrono::duration<Rep, Period>& period);

[[noreturn]] void throw_bad_period();

template <class F>
constexpr void check_timer_callable() {
  static_assert(
      std::is_invocable_v<std::decay_t<F>&> || std::is_invocable_v<std::decay_t<F>&, timer&>,
      "weft::pool::spawn_after/spawn_at/spawn_every: f must be callable with no "
      "arguments, or with a weft::timer& (its own timer, to cancel it from a run)");
}

template <class F>
std::shared_ptr<timer_state> make_timer_state(std::chrono::steady_clock::duration period, F&& f) {
  return std::make_shared<timer_box<std::decay_t<F>>>(period, std::forward<F>(f));
}

}  // namespace detail

// The handle of a timer made by pool::spawn_after, spawn_at or spawn_every.
// Movable, not copyable; destroying it (or assigning another timer to it)
// does not cancel the timer: a timer whose handle is gone still runs (a
// spawn_every timer then runs until the pool is destroyed, or until a run
// cancels it through the weft::timer& it may take).
class timer {
 public:
  timer() noexcept = default;  // refers to no timer
  timer(timer&&) noexcept = default;
  timer& operator=(timer&&) noexcept = default;
  timer(const timer&) = delete;
  timer& operator=(const timer&) = delete;
  ~timer() = default;

  // After cancel() returns, the callable never starts again: a one-shot
  // timer whose run has not started never runs, a periodic one starts no
  // further run. A run that has already started goes on (cancel() does not
  // wait for it, so a run may cancel its own timer); pool.wait() after
  // cancel() waits for it, and the callable has been destroyed once that
  // wait returns. Returns true if this call stopped the timer: false if it
  // was already cancelled or stopped, if a one-shot run had already
  // started, or for an empty handle. Any thread, any number of times, also
  // after the pool is gone.
  bool cancel() noexcept;

  // Whether the callable may still start a run: false once cancel() was
  // called, once a one-shot timer's run has started, once a periodic
  // timer's run threw or the pool's destruction cancelled it, and for an
  // empty handle. A snapshot: true may turn false at any moment.
  [[nodiscard]] bool pending() const noexcept {
    if (!state_) return false;
    const std::uint32_t mask = state_->period == state_->period.zero()
                                   ? detail::timer_state::cancelled | detail::timer_state::started
                                   : detail::timer_state::cancelled;
    // Relaxed: see timer_state::status.
    return (state_->status.load(std::memory_order_relaxed) & mask) == 0;
  }

  // Whether this handle refers to a timer (false when default-constructed
  // or moved from).
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  explicit operator bool() const noexcept { return valid(); }

 private:
  friend timer detail::schedule_timer(pool&, const std::shared_ptr<detail::timer_state>&,
                                      std::chrono::steady_clock::time_point);
  template <class F>
  friend struct detail::timer_box;
  explicit timer(std::shared_ptr<detail::timer_state> s) noexcept : state_(std::move(s)) {}

  std::shared_ptr<detail::timer_state> state_;
};

// ---------------------------------------------------------------------------

namespace detail {

template <class F>
void timer_box<F>::invoke(const std::shared_ptr<timer_state>& self) {
  // NOLINTBEGIN(bugprone-unchecked-optional-access): engaged while the timer may run
  if constexpr (std::is_invocable_v<F&>) {
    (*fn)();
  } else {
    timer handle{self};
    (*fn)(handle);
  }
  // NOLINTEND(bugprone-unchecked-optional-access)
}

template <class Rep, class Period>
std::chrono::steady_clock::duration timer_period(const std::chrono::duration<Rep, Period>& period) {
  constexpr const char* who = "weft::pool::spawn_every";
  if (is_nan(period)) throw_nan_time(who, time_arg::period);
  if (!(period > period.zero())) throw_bad_period();
  return std::max(to_steady_duration(period, who, time_arg::period),
                  std::chrono::steady_clock::duration{1});
}

}  // namespace detail

template <class Rep, class Period, class F>
timer pool::spawn_after(const std::chrono::duration<Rep, Period>& delay, F&& f) {
  detail::check_timer_callable<F>();
  if constexpr (std::is_invocable_v<std::decay_t<F>&> ||
                std::is_invocable_v<std::decay_t<F>&, timer&>) {
    const auto due = detail::deadline_after(delay, "weft::pool::spawn_after");
    return detail::schedule_timer(*this, detail::make_timer_state({}, std::forward<F>(f)), due);
  } else {
    return {};
  }
}

template <class Clock, class Duration, class F>
timer pool::spawn_at(const std::chrono::time_point<Clock, Duration>& when, F&& f) {
  detail::check_timer_callable<F>();
  if constexpr (std::is_invocable_v<std::decay_t<F>&> ||
                std::is_invocable_v<std::decay_t<F>&, timer&>) {
    const auto due = detail::steady_deadline(when, "weft::pool::spawn_at");
    return detail::schedule_timer(*this, detail::make_timer_state({}, std::forward<F>(f)), due);
  } else {
    return {};
  }
}

template <class Rep, class Period, class F>
timer pool::spawn_every(const std::chrono::duration<Rep, Period>& period, F&& f) {
  detail::check_timer_callable<F>();
  if constexpr (std::is_invocable_v<std::decay_t<F>&> ||
                std::is_invocable_v<std::decay_t<F>&, timer&>) {
    const std::chrono::steady_clock::duration every = detail::timer_period(period);
    const auto due = detail::deadline_after(every, "weft::pool::spawn_every");
    return detail::schedule_timer(*this, detail::make_timer_state(every, std::forward<F>(f)), due);
  } else {
    return {};
  }
}

}  // namespace weft
