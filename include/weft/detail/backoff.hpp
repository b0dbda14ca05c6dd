// Backoff for a thread that waits on a condition it cannot be notified of.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

#include "config.hpp"

namespace weft::detail {

// Spins for a few microseconds, then yields for a while, then sleeps with
// doubling pauses from 50 us up to 1 ms, so a wait that lasts long costs a
// wake-up per millisecond at most.
class backoff {
 public:
  void reset() noexcept { step_ = 0; }

  void pause() {
    if (step_ < spin_steps) {
      for (int i = 0; i < relax_per_step; ++i) cpu_relax();
    } else if (step_ < spin_steps + yield_steps) {
      std::this_thread::yield();
    } else {
      const unsigned doublings = std::min(step_ - spin_steps - yield_steps, max_doublings);
      std::this_thread::sleep_for(first_sleep * (1U << doublings));
    }
    if (step_ < spin_steps + yield_steps + max_doublings) ++step_;
  }

 private:
  static constexpr unsigned spin_steps = 64;
  static constexpr int relax_per_step = 16;
  static constexpr unsigned yield_steps = 64;
  static constexpr std::chrono::microseconds first_sleep{50};
  static constexpr unsigned max_doublings = 4;  // 50 us * 2^4 = 800 us
  unsigned step_ = 0;
};

}  // namespace weft::detail
