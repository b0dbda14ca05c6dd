// A pool's counters (pool::stats()): worker_stats per worker, pool_stats
// for the whole pool.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace weft {

/// One worker's counters in pool_stats, since the pool was made or since
/// pool::reset_stats(). Each worker counts its own, without a shared atomic.
struct worker_stats {
  std::uint64_t jobs = 0;            ///< jobs it took from a queue and ran (its own deque included)
  std::uint64_t steals = 0;          ///< jobs it took from other workers' deques
  std::uint64_t steal_attempts = 0;  ///< other workers' deques it looked into
  std::uint64_t parks = 0;           ///< times it went to sleep
  std::uint64_t wakeups = 0;         ///< times it was woken for work
  std::chrono::nanoseconds busy{0};  ///< time not idle
  /// Time looking for work (spinning briefly) or asleep, between jobs.
  std::chrono::nanoseconds idle{0};
  /// Adds another worker's counters (pool_stats::total).
  worker_stats& operator+=(const worker_stats& o) noexcept;
};

/// A pool's counters, as pool::stats() reads them.
struct pool_stats {
  std::size_t workers = 0;    ///< worker threads (0 in sequential mode)
  std::size_t job_slots = 0;  ///< heap-job slots allocated so far, all threads together
  std::size_t handoffs = 0;   ///< waits that reached the help-depth limit (docs/waiting.md)
  /// Hand-offs that could not start a thread; those waits helped on past the limit.
  std::size_t handoff_failures = 0;
  /// Graph tasks that could not be queued (a queue could not grow for lack
  /// of memory) and ran on the thread that made them ready instead.
  std::size_t unqueued_runs = 0;
  std::size_t lanes = 0;  ///< submission lanes made for outside threads so far
  /// Jobs dropped before they started: by purge(), or by an overflow
  /// callable that let its weft::job go.
  std::size_t cancelled = 0;
  /// Submissions that found the bounded submission full (pool_options::capacity).
  std::size_t overflowed = 0;
  std::vector<worker_stats> per_worker;  ///< by worker index (empty in sequential mode)
  worker_stats total;                    ///< the sum of per_worker
};

}  // namespace weft
