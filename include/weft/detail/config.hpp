// Small platform helpers and the tuning constants shared by the scheduler.
#pragma once

#include <chrono>
#include <cstddef>

#include "weft/detail/platform.hpp"

namespace weft::detail {

// Separates data written by different threads. 64 bytes is the line size of
// every x86-64 and most AArch64 parts; std::hardware_destructive_interference_size
// is avoided because GCC warns that its value is not ABI-stable.
inline constexpr std::size_t cache_line = 64;

// Tells the CPU that this thread is in a spin-wait loop.
inline void cpu_relax() noexcept { platform::spin_hint(); }

// Pause instructions between two looks at the queues (or a latch) while
// spinning: a `pause` is 10 to 140 cycles depending on the CPU, so 8 keeps the
// reaction time well under a microsecond without hammering shared lines.
inline constexpr int relax_per_poll = 8;

// How long a worker keeps looking for work after its last job before it parks.
// Long enough to catch the next job of a submit/get ping-pong without a
// futex round trip (which costs tens of microseconds), short enough that an
// idle worker burns well under a millisecond per idle period.
inline constexpr std::chrono::microseconds idle_spin_time{100};

// How long a thread that is not a worker spins when it starts to wait
// (future::get, an external join, pool::wait), unless a worker is being
// woken; long enough for a round trip to an awake worker.
inline constexpr std::chrono::microseconds pure_spin_time{1};

// How long such a thread then polls, yielding its CPU between polls, before
// it parks (docs/waiting.md, "Outside waits").
inline constexpr std::chrono::microseconds block_spin_time{20};

// A worker napping in wait_until() until a job finishes: the longest its
// first nap after registering as a finish waiter lasts, since a worker that
// looked for waiters just before then does not signal (docs/waiting.md,
// "wait_until on a worker"). Not scaled by fault::backoff_sleep_scale.
inline constexpr std::chrono::microseconds finish_registration_grace{50};

// Helping (running other jobs while waiting) nests at most this deep on one
// stack. At the limit the waiting thread hands its role to a fresh thread and
// blocks, so that deep recursion of waits never overflows a stack (see
// docs/waiting.md).
inline constexpr std::size_t max_help_depth = 512;

}  // namespace weft::detail
