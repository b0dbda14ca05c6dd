// The queue through which threads that are not workers hand jobs to a pool.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

#include "config.hpp"
#include "job.hpp"

namespace weft::detail {

// A FIFO shared by any number of producers (threads that are not workers of
// the pool) and the pool's workers. A mutex guards a growable ring; an atomic
// size lets idle workers look without taking the lock, and is what the sleep
// protocol reads (docs/sleep.md).
class injector {
 public:
  // capacity: the ring's first size, a power of two (it doubles when full).
  explicit injector(std::size_t capacity = initial_capacity) : ring_(capacity) {}

  // Any thread.
  void push(job* j) { push_many(&j, 1); }

  // Any thread: push() for n jobs under one lock, published together.
  // Throws only std::bad_alloc, and then no job was added.
  void push_many(job* const* jobs, std::size_t n) {
    std::lock_guard lock{mutex_};
    while (count_ + n > ring_.size()) grow();
    for (std::size_t i = 0; i < n; ++i) ring_[(head_ + count_ + i) & (ring_.size() - 1)] = jobs[i];
    count_ += n;
    // seq_cst pairs with the seq_cst load in empty(), called by a worker that
    // has announced it is about to sleep (sleep_controller::prepare): either
    // that worker sees these jobs, or this thread's following load of the
    // sleeper count sees the worker (a Dekker pair, see docs/sleep.md).
    size_.store(count_, std::memory_order_seq_cst);
  }

  // Any thread: puts j back at the front, as the next job pop() returns (a
  // job taken just as its pool was paused). Throws only std::bad_alloc, and
  // then j was not added.
  void push_front(job* j) {
    std::lock_guard lock{mutex_};
    if (count_ == ring_.size()) grow();
    head_ = (head_ + ring_.size() - 1) & (ring_.size() - 1);
    ring_[head_] = j;
    ++count_;
    // seq_cst: as in push_many().
    size_.store(count_, std::memory_order_seq_cst);
  }

  // Any thread: takes j out of the queue if it is still there, keeping the
  // order of the others; false if another thread took it first. For a job
  // put back with push_front() that a concurrent purge may have missed.
  bool remove(job* j) noexcept {
    std::lock_guard lock{mutex_};
    const std::size_t mask = ring_.size() - 1;
    for (std::size_t i = 0; i < count_; ++i) {
      if (ring_[(head_ + i) & mask] != j) continue;
      for (std::size_t k = i; k + 1 < count_; ++k) {
        ring_[(head_ + k) & mask] = ring_[(head_ + k + 1) & mask];
      }
      --count_;
      // Relaxed: as in pop(), a smaller size hides no work from a sleeper.
      size_.store(count_, std::memory_order_relaxed);
      return true;
    }
    return false;
  }

  // Any thread. Takes the oldest job and up to `extra` more into `out`
  // (oldest first), so a worker pays for the lock once per batch.
  job* pop(std::vector<job*>* out = nullptr, std::size_t extra = 0) {
    if (empty()) return nullptr;
    std::lock_guard lock{mutex_};
    if (count_ == 0) return nullptr;
    job* first = take();
    if (out != nullptr) {
      // Leave at least half for other workers.
      std::size_t n = std::min(extra, count_ / 2);
      while (n-- > 0) out->push_back(take());
    }
    // Relaxed: a smaller size never hides work from a sleeper; the job a
    // sleeper could miss is the one this thread took and will run.
    size_.store(count_, std::memory_order_relaxed);
    return first;
  }

  // Any thread; see push() for what the seq_cst load pairs with.
  [[nodiscard]] bool empty() const noexcept { return size_.load(std::memory_order_seq_cst) == 0; }

 private:
  static constexpr std::size_t initial_capacity = 1024;

  job* take() noexcept {
    job* j = ring_[head_];
    head_ = (head_ + 1) & (ring_.size() - 1);
    --count_;
    return j;
  }

  void grow() {
    std::vector<job*> bigger(ring_.size() * 2);
    for (std::size_t i = 0; i < count_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
    ring_.swap(bigger);
    head_ = 0;
  }

  // Read by idle workers and producers without the lock.
  alignas(cache_line) std::atomic<std::size_t> size_{0};
  // Guarded by mutex_.
  alignas(cache_line) std::mutex mutex_;
  std::vector<job*> ring_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

}  // namespace weft::detail
