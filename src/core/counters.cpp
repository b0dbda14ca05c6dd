#include "weft/detail/core/counters.hpp"

#include <algorithm>

namespace weft {

worker_stats& worker_stats::operator+=(const worker_stats& o) noexcept {
  jobs += o.jobs;
  steals += o.steals;
  steal_attempts += o.steal_attempts;
  parks += o.parks;
  wakeups += o.wakeups;
  busy += o.busy;
  idle += o.idle;
  return *this;
}

namespace detail {

void counters::read(pool_stats& s, const workers& all) const {
  s.handoffs = handoffs_.load(std::memory_order_relaxed);
  s.handoff_failures = handoff_failures_.load(std::memory_order_relaxed);
  s.unqueued_runs = unqueued_runs_.load(std::memory_order_relaxed);
  s.cancelled = cancelled_.load(std::memory_order_relaxed);
  s.overflowed = overflowed_.load(std::memory_order_relaxed);
  std::lock_guard lock{mutex_};
  const auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now() - since_);
  s.per_worker.reserve(s.workers);
  for (std::size_t i = 0; i < s.workers; ++i) {
    worker_stats ws = read_worker(*all[i]);
    if (i < base_.size()) {
      const worker_stats& base = base_[i];
      ws.jobs -= base.jobs;
      ws.steals -= base.steals;
      ws.steal_attempts -= base.steal_attempts;
      ws.parks -= base.parks;
      ws.wakeups -= base.wakeups;
      ws.idle -= base.idle;
    }
    // A worker parked right now has not added its current sleep yet.
    ws.idle = std::min(std::max(ws.idle, std::chrono::nanoseconds{0}), elapsed);
    ws.busy = elapsed - ws.idle;
    s.total += ws;
    s.per_worker.push_back(ws);
  }
}

void counters::reset(const workers& all) {
  std::lock_guard lock{mutex_};
  base_.clear();
  for (const auto& w : all) base_.push_back(read_worker(*w));
  since_ = std::chrono::steady_clock::now();
}

worker_stats counters::read_worker(const worker& w) noexcept {
  // Relaxed: counters, read as some recent value of each.
  worker_stats ws;
  // The idle period in progress, if any (read() keeps the sum within the
  // elapsed time should the period end between these loads).
  const std::uint64_t since = w.counts.idle_since.load(std::memory_order_relaxed);
  std::uint64_t current = 0;
  if (since != 0) {
    const std::uint64_t now = now_ns();
    current = now > since - 1 ? now - (since - 1) : 0;
  }
  ws.jobs = w.counts.jobs.load(std::memory_order_relaxed);
  ws.steals = w.counts.steals.load(std::memory_order_relaxed);
  ws.steal_attempts = w.counts.steal_attempts.load(std::memory_order_relaxed);
  ws.parks = w.counts.parks.load(std::memory_order_relaxed);
  ws.wakeups = w.counts.wakeups.load(std::memory_order_relaxed);
  ws.idle = std::chrono::nanoseconds{
      static_cast<std::int64_t>(w.counts.idle_ns.load(std::memory_order_relaxed) + current)};
  return ws;
}

}  // namespace detail
}  // namespace weft
