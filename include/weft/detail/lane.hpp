// Lanes: how threads that are not workers hand jobs to a pool without a lock.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "config.hpp"
#include "job.hpp"
#include "ring.hpp"

namespace weft::detail {

// A FIFO with one producer (the thread the lane is bound to) and any number of
// consumers, which take the oldest jobs in batches. It is the Chase-Lev deque
// of deque.hpp without pop(): since the producer never takes, a consumer may
// claim several slots [t, t+n) with one CAS on top, as long as t+n <= bottom.
// See docs/deque.md for the orderings, which are the same as there.
class lane_queue {
 public:
  lane_queue() : ring_{initial_capacity} {}
  ~lane_queue() = default;
  lane_queue(const lane_queue&) = delete;
  lane_queue& operator=(const lane_queue&) = delete;

  // Producer only.
  void push(job* item) { push_many(&item, 1); }

  // Producer only. Pushes items[0], ..., items[n - 1] as push() would one by
  // one, but publishes them with a single store of bottom_ (a batch from
  // pool::spawn_all). Throws only std::bad_alloc, and then no item was added.
  void push_many(job* const* items, std::size_t n) {
    // Relaxed: the producer is the only writer of bottom_ and of the ring.
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);
    const auto count = static_cast<std::int64_t>(n);
    buffer* buf = ring_.owned();
    if (b - top_seen_ + count > buf->capacity()) {
      // Only when the ring looks full: top_ is on the consumers' line, and
      // top_ only grows, so an old value is a safe lower bound until then.
      // Acquire pairs with the successful CAS in take(): the consumers'
      // reads of slots below top_seen_ happen before this push reuses them.
      top_seen_ = top_.load(std::memory_order_acquire);
      while (b - top_seen_ + count > buf->capacity()) buf = ring_.grow(buf, top_seen_, b);
    }
    for (std::int64_t i = 0; i < count; ++i) {
      // Relaxed: the store of bottom_ below publishes the slots.
      buf->at(b + i).store(items[i], std::memory_order_relaxed);
    }
    // seq_cst: its release half pairs with the loads of bottom_ in take();
    // its seq_cst half is the producer's side of the sleep protocol's Dekker
    // pair with empty() (docs/sleep.md).
    bottom_.store(b + count, std::memory_order_seq_cst);
  }

  // Any thread. Takes up to `max` of the oldest jobs (at most half of what
  // is there, rounded up) into out, oldest first; returns how many. 0 when
  // empty; retries when another consumer won the race.
  std::size_t take(job** out, std::size_t max) noexcept {
    for (;;) {
      // seq_cst, as in work_deque::steal(): ordered before the load of
      // bottom_ below.
      std::int64_t t = top_.load(std::memory_order_seq_cst);
      // Acquire half pairs with the seq_cst store in push().
      const std::int64_t b = bottom_.load(std::memory_order_seq_cst);
      if (t >= b) return 0;
      const auto n = static_cast<std::int64_t>(
          std::min<std::uint64_t>(max, static_cast<std::uint64_t>(b - t + 1) / 2));
      // An acquire load, paired with the release in grow().
      buffer* const buf = ring_.shared();
      for (std::int64_t i = 0; i < n; ++i) {
        // Relaxed: the loads above made the values visible; a slot reused
        // meanwhile means top_ moved past t and the CAS below fails.
        out[i] = buf->at(t + i).load(std::memory_order_relaxed);
      }
      // seq_cst: orders the claim among the consumers' claims and loads; its
      // release half pairs with the acquire load of top_ in push().
      if (top_.compare_exchange_strong(t, t + n, std::memory_order_seq_cst,
                                       std::memory_order_relaxed)) {
        return static_cast<std::size_t>(n);
      }
    }
  }

  // Any thread; a hint: how many jobs have ever been pushed. Relaxed: it only
  // tells an idle worker whether the producer is still pushing.
  [[nodiscard]] std::int64_t pushed() const noexcept {
    return bottom_.load(std::memory_order_relaxed);
  }

  // Any thread; a hint of how many jobs wait. Relaxed, like pushed().
  [[nodiscard]] std::int64_t waiting() const noexcept {
    return bottom_.load(std::memory_order_relaxed) - top_.load(std::memory_order_relaxed);
  }

  // Any thread; seq_cst loads for the sleep protocol (docs/sleep.md).
  [[nodiscard]] bool empty() const noexcept {
    const std::int64_t t = top_.load(std::memory_order_seq_cst);
    const std::int64_t b = bottom_.load(std::memory_order_seq_cst);
    return b <= t;
  }

 private:
  static constexpr std::int64_t initial_capacity = 256;

  using buffer = growable_ring<job*>::buffer;

  // Consumers CAS it; the producer reads it.
  alignas(cache_line) std::atomic<std::int64_t> top_{0};
  // Written by the producer only; read by everyone.
  alignas(cache_line) std::atomic<std::int64_t> bottom_{0};
  growable_ring<job*> ring_;   // the slots; grown by the producer
  std::int64_t top_seen_ = 0;  // producer only: a value top_ had (a lower bound)
};

// What one outside thread uses to submit to one pool: a queue and a job
// cache, both owned by the thread the lane is bound to.
struct lane {
  lane_queue queue;
  job_cache cache;
  // Whether a thread is bound to the lane. Acquire/release pair the hand-over
  // of the producer and cache-owner roles between successive threads.
  std::atomic<bool> bound{false};
};

// A pool's lanes. Lanes are created on demand, up to max_lanes, and never
// destroyed before the set; a lane is rebound when its thread ends. Shared
// with the threads' bindings so that a thread ending after its pool does not
// touch freed memory.
class lane_set {
 public:
  static constexpr std::size_t max_lanes = 64;

  // Binds a free lane to the calling thread; nullptr when all are taken.
  lane* bind();

  // Any thread: lanes [0, size()) exist.
  [[nodiscard]] std::size_t size() const noexcept {
    // seq_cst pairs with the seq_cst store in bind(). Acquire alone would
    // show the lane built; seq_cst also puts this load in the total order,
    // which the sleep protocol's re-check needs (docs/sleep.md, "On a weakly
    // ordered CPU"): a sleeper whose prepare() follows a producer's push
    // into a new lane must see that lane counted.
    return count_.load(std::memory_order_seq_cst);
  }
  [[nodiscard]] lane& operator[](std::size_t i) const noexcept { return *lanes_[i]; }

 private:
  std::mutex mutex_;  // serialises creation
  std::array<std::unique_ptr<lane>, max_lanes> lanes_;
  std::atomic<std::size_t> count_{0};
};

// The calling thread's lane for the pool with this id, binding one on first
// use; nullptr when the pool's lanes are all taken (then the injector serves).
lane* thread_lane(std::uint64_t pool_id, const std::shared_ptr<lane_set>& lanes);

// One-entry cache in front of thread_lane(); pool ids are never reused, so a
// stale entry never matches a new pool.
struct lane_cache_entry {
  std::uint64_t pool_id = 0;
  lane* bound = nullptr;
};
inline constinit thread_local lane_cache_entry tls_lane{};

}  // namespace weft::detail
