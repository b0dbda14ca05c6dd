// A part of the pool's core (docs/design.md, "The core's parts"): the job
// accounting that is not kept per job cache (docs/waiting.md, "When is a
// pool idle?"). Every job is counted against a cache (a worker's, an
// outside thread's lane's, or the shared one this part owns) in one of two
// epoch parities; this part holds the epochs (the one new submissions
// belong to, and the newest one seen drained), whether the pool is closing,
// and the shared cache with the mutex whose holder owns it. Both halves of
// the epoch flip's order are here (drain()'s seq_cst store, epoch()'s
// seq_cst load), and close()'s half of the closing pair (the submitter's
// half is its seq_cst spawn count, then closing()).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "../config.hpp"
#include "../job.hpp"
#include "idle_waiters.hpp"

namespace weft::detail {

// How one job is counted (pool::counting). Two words, so that it comes back
// in registers.
struct ticket {
  job_cache* cache;     // counted against (heap jobs are allocated from it)
  std::uint32_t epoch;  // epoch parity
  // When the caller is not a worker of the pool, the number of jobs it
  // counted: each is a submission it must end (end_submission) once it
  // stops touching the pool. 0 for a worker.
  std::uint32_t submission;
};

class accounting {
 public:
  accounting() = default;
  accounting(const accounting&) = delete;
  accounting& operator=(const accounting&) = delete;

  // The destructor begins: submissions from outside the pool's own jobs are
  // refused from now on. seq_cst pairs with closing() after a submitter's
  // seq_cst spawn count, and with the destructor's seq_cst loads of the
  // counts (pool::counting::quiescent()): a submitter either sees the pool closing,
  // or the destructor sees its job and waits for it.
  void close() noexcept { closing_.store(true, std::memory_order_seq_cst); }
  // seq_cst: see close().
  [[nodiscard]] bool closing() const noexcept { return closing_.load(std::memory_order_seq_cst); }

  // The epoch new submissions from threads that are not jobs of the pool
  // belong to; its parity selects their counters. seq_cst: ordered with
  // the flip in drain(). A submission that reads the new epoch counts in
  // the new parity; one that read the old epoch before the flip is
  // concurrent with that wait, and whoever drains the old parity next
  // waits for it (docs/waiting.md).
  [[nodiscard]] std::uint64_t epoch() const noexcept {
    return epoch_.load(std::memory_order_seq_cst);
  }
  // Whether epoch e has been seen drained. Acquire pairs with drain()'s
  // release store of the record.
  [[nodiscard]] bool drained(std::uint64_t e) const noexcept {
    return drained_epoch_.load(std::memory_order_acquire) >= e;
  }
  // Waits until every job of epoch `target` and earlier has finished:
  // wait_until_drained(e) waits until parity e & 1 is quiescent or
  // drained(e) holds, and returns false if the caller gave up (a timed
  // wait). Waiters in `idle` are woken when an epoch is recorded drained.
  template <class Wait>
  bool drain(std::uint64_t target, Wait&& wait_until_drained, idle_waiters& idle) {
    // Epoch e's jobs are counted in parity e & 1. Epochs drain in order, and
    // a parity is reused (by the flip to e + 2) only after epoch e was seen
    // drained, so a parity never holds two epochs' jobs (docs/waiting.md).
    for (;;) {
      // Acquire pairs with the release store below (another waiter's).
      const std::uint64_t done = drained_epoch_.load(std::memory_order_acquire);
      if (done >= target) return true;
      const std::uint64_t e = done + 1;
      {
        std::lock_guard lock{epoch_mutex_};
        // Epoch e - 1 has drained, so parity (e + 1) & 1 is free: move new
        // submissions there. seq_cst: ordered with the load in epoch().
        if (epoch_.load(std::memory_order_relaxed) == e) {
          epoch_.store(e + 1, std::memory_order_seq_cst);
        }
      }
      // Until the parity is quiescent, or another waiter has seen epoch e
      // drained: after that the parity may be reused for epoch e + 2, whose
      // jobs came after us. False: the caller gave up; epoch e is left for
      // the next waiter to record.
      if (!wait_until_drained(e)) return false;
      bool recorded = false;
      {
        std::lock_guard lock{epoch_mutex_};
        if (drained_epoch_.load(std::memory_order_relaxed) < e) {
          // Release pairs with the acquire loads above and in drained().
          drained_epoch_.store(e, std::memory_order_release);
          recorded = true;
        }
      }
      // Other waiters blocked on epoch e may stop now: wake()'s seq_cst
      // load, against a blocking waiter's increment and check.
      if (recorded) idle.wake();
    }
  }

  // The cache of threads that are not workers and have no lane (sequential
  // pools, outside threads when every lane is taken): whoever holds
  // shared_mutex() owns it.
  [[nodiscard]] job_cache& shared() noexcept { return shared_; }
  [[nodiscard]] const job_cache& shared() const noexcept { return shared_; }
  [[nodiscard]] bool is_shared(const job_cache& c) const noexcept { return &c == &shared_; }
  // A heap job from `from`: the caller owns any cache but the shared one,
  // which it takes the lock for.
  heap_job* allocate_job(job_cache& from);
  // A block for a future's state from `from`, and the slab it belongs to.
  struct state_memory {
    state_block* block;
    state_slab* slab;
  };
  state_memory allocate_state(job_cache& from) {
    if (!is_shared(from)) {
      state_block* b = from.allocate_state();  // the caller owns it
      return {b, from.slab()};
    }
    std::lock_guard lock{shared_mutex_};
    state_block* b = shared_.allocate_state();
    return {b, shared_.slab()};
  }

 private:
  // Set once by close(). Any thread reads, on every submission from outside.
  alignas(cache_line) std::atomic<bool> closing_{false};
  // The current epoch (epoch()), and the newest one seen drained, written
  // under epoch_mutex_.
  std::atomic<std::uint64_t> epoch_{1};
  std::atomic<std::uint64_t> drained_epoch_{0};
  std::mutex epoch_mutex_;
  alignas(cache_line) std::mutex shared_mutex_;
  job_cache shared_;
};

}  // namespace weft::detail
