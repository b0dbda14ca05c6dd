// Fault injection for weft's own tests: failures that are hard to provoke
// from outside (a thread that cannot start). Off unless a test turns it on;
// one relaxed load where it is checked, on paths that are already slow.
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

}  // namespace weft::detail::fault
