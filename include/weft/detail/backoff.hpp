// Backoff for a thread that waits on a condition it cannot be notified of.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

#include "config.hpp"
#include "fault.hpp"

namespace weft::detail {

// The last phase of a backoff for a wait that nobody can cut short.
struct plain_sleep {
  void operator()(std::chrono::microseconds d) const { std::this_thread::sleep_for(d); }
};

// Spins for a few microseconds, then yields for a while, then sleeps with
// doubling pauses from 50 us up to 1 ms, so a wait that lasts long costs a
// wake-up per millisecond at most.
class backoff {
 public:
  void reset() noexcept { step_ = 0; }

  // Sleeps with std::this_thread::sleep_for in the last phase.
  void pause() { pause(plain_sleep{}); }

  // Sleeps with nap(d) in the last phase instead: a wait whose end can wake
  // the waiter passes a nap that returns as soon as it does (at most after d).
  template <class Nap>
  void pause(Nap&& nap) {
    if (step_ < spin_steps) {
      for (int i = 0; i < relax_per_step; ++i) cpu_relax();
    } else if (step_ < spin_steps + yield_steps) {
      std::this_thread::yield();
    } else {
      const unsigned doublings = std::min(step_ - spin_steps - yield_steps, max_doublings);
      nap(std::chrono::microseconds{first_sleep * (1U << doublings) * fault::sleep_scale()});
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
