// Fault injection for weft's own tests: failures that are hard to provoke
// from outside (a thread that cannot start, a wait paused at the wrong
// time). Off unless a test turns it on; one relaxed load where it is
// checked, on paths that are already slow.
#pragma once

#include <atomic>

namespace weft::detail::fault {

// The next n attempts to start a hand-off thread fail as if the system had
// no threads left (std::system_error with EAGAIN).
inline std::atomic<int> failing_thread_starts{0};

inline bool thread_start_fails() noexcept {
  // Relaxed: a test sets it before the waits it provokes, from the thread
  // that starts them, or accepts that some attempt after the store fails.
  int n = failing_thread_starts.load(std::memory_order_relaxed);
  while (n > 0) {
    if (failing_thread_starts.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

// The next n workers that pin themselves (pool_options::cpus) fail as if
// pthread_setaffinity_np had returned EINVAL.
inline std::atomic<int> failing_pins{0};

inline bool pin_fails() noexcept {
  // Relaxed: a test sets it before it constructs the pool.
  int n = failing_pins.load(std::memory_order_relaxed);
  while (n > 0) {
    if (failing_pins.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) return true;
  }
  return false;
}

// Called, when set, by a thread that is not a worker at two points of
// pool::waits::await() and await_until(): just after the caller saw the latch unset
// (await_point::entered), and after its visit is published and the latch
// was seen unset again (await_point::visiting). A test pauses there to race
// the pool's destructor.
enum class await_point { entered, visiting };
inline std::atomic<void (*)(await_point)> await_hook{nullptr};

inline void at(await_point point) {
  // Relaxed: a test sets the hook before the waits it provokes.
  if (auto* hook = await_hook.load(std::memory_order_relaxed)) hook(point);
}

// Called, when set, by a worker that took a job just as its pool was paused,
// before it puts the job back (pool::hold_if_paused()): a test holds the
// worker there while a purge() runs.
inline std::atomic<void (*)()> hold_hook{nullptr};

inline void at_hold() {
  // Relaxed: a test sets the hook before the pauses it provokes.
  if (auto* hook = hold_hook.load(std::memory_order_relaxed)) hook();
}

// Called, when set, by a worker that naps until another thread wakes it
// (pool::waits::nap_until_idle(), pool::waits::finish_nap, a task_group's wait) as its
// nap begins, after the wait's last look at its condition and before the
// nap announces itself: a stress test delays it there, so that jobs end in
// between.
inline std::atomic<void (*)()> nap_hook{nullptr};

inline void before_nap() {
  // Relaxed: a test sets the hook before the waits it provokes.
  if (auto* hook = nap_hook.load(std::memory_order_relaxed)) hook();
}

// Multiplies the pauses of a backoff's sleeping phase (detail::backoff), so
// that a test can tell a wait that is woken when it ends from one that
// sleeps its pauses out.
inline std::atomic<unsigned> backoff_sleep_scale{1};

inline unsigned sleep_scale() noexcept {
  // Relaxed: a test sets it before the waits it provokes.
  return backoff_sleep_scale.load(std::memory_order_relaxed);
}

}  // namespace weft::detail::fault
