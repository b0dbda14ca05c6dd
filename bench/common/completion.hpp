// How a benchmark's calling thread waits for a job of a library that has no
// future for it (oneTBB's task_arena::enqueue, an OpenMP task): the job
// publishes its result and counts itself finished; the caller blocks on the
// count with std::atomic::wait (a brief spin, then a futex), the same
// blocking shape as weft's future::get from a thread that is not a worker.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace bench {

class completion {
 public:
  // Caller: one more job is on its way; returns how many were issued.
  std::uint64_t issue() noexcept { return ++issued_; }

  // The job, once its results are written.
  void publish() noexcept {
    // Release pairs with the acquire loads in await(): the job's writes are
    // visible to the caller once it sees the new count.
    finished_.fetch_add(1, std::memory_order_release);
    finished_.notify_one();
  }

  // The job, as its last touch of anything the caller owns.
  void depart() noexcept {
    // Release pairs with the acquire load in drain().
    departed_.fetch_add(1, std::memory_order_release);
  }

  // Caller: blocks until every job issued so far has published.
  void await() noexcept {
    for (std::uint64_t seen = finished_.load(std::memory_order_acquire); seen != issued_;
         seen = finished_.load(std::memory_order_acquire)) {
      finished_.wait(seen, std::memory_order_acquire);
    }
  }

  // Caller: returns once no job touches the caller's frame any more.
  void drain() noexcept {
    while (departed_.load(std::memory_order_acquire) != issued_) std::this_thread::yield();
  }

 private:
  std::atomic<std::uint64_t> finished_{0};  // jobs whose result is published
  std::atomic<std::uint64_t> departed_{0};  // jobs that no longer touch the caller's frame
  std::uint64_t issued_ = 0;                // caller only
};

}  // namespace bench
