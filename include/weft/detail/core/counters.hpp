// A part of the pool's core (docs/design.md, "The core's parts"): what
// pool::stats() reports. The pool's own counters (jobs dropped, overflowed,
// waits handed off, jobs run without a queue) live here; each worker counts
// its own jobs, steals, parks and idle time in its slot (detail/context.hpp),
// and this part reads them against the baseline reset_stats() took.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "../../stats.hpp"
#include "../context.hpp"

namespace weft::detail {

class counters {
 public:
  using workers = std::vector<std::unique_ptr<worker>>;

  // Relaxed throughout: counters, read as some recent value of each.
  void add_cancelled(std::size_t n) noexcept { cancelled_.fetch_add(n, std::memory_order_relaxed); }
  void add_overflowed() noexcept { overflowed_.fetch_add(1, std::memory_order_relaxed); }
  void add_handoff() noexcept { handoffs_.fetch_add(1, std::memory_order_relaxed); }
  void add_handoff_failure() noexcept { handoff_failures_.fetch_add(1, std::memory_order_relaxed); }
  void add_unqueued_runs(std::size_t n) noexcept {
    unqueued_runs_.fetch_add(n, std::memory_order_relaxed);
  }

  // Fills s with the pool's counters and those of workers [0, s.workers)
  // since the last reset() (or the pool's start).
  void read(pool_stats& s, const workers& all) const;
  // The baseline read() subtracts: every worker's counters as they are now.
  void reset(const workers& all);

  // steady_clock in nanoseconds, as the workers' idle counters keep it.
  [[nodiscard]] static std::uint64_t now_ns() noexcept {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
  }

 private:
  // A worker's counters as they are now.
  static worker_stats read_worker(const worker& w) noexcept;

  std::atomic<std::size_t> cancelled_{0};         // pool_stats::cancelled
  std::atomic<std::size_t> overflowed_{0};        // pool_stats::overflowed
  std::atomic<std::size_t> handoffs_{0};          // pool_stats::handoffs
  std::atomic<std::size_t> handoff_failures_{0};  // pool_stats::handoff_failures
  std::atomic<std::size_t> unqueued_runs_{0};     // pool_stats::unqueued_runs
  // What reset() last read of each worker's counters, and when; read()
  // reports the difference. Guarded by mutex_.
  mutable std::mutex mutex_;
  std::vector<worker_stats> base_;
  std::chrono::steady_clock::time_point since_ = std::chrono::steady_clock::now();
};

}  // namespace weft::detail
