// A part of the pool's core (docs/design.md, "The core's parts"): what makes
// a worker look past the plain queues (docs/control.md). One word, read by
// every find_work(), is non-zero while anything needs that look: the pool is
// paused, a shrink waits for leaving workers, or jobs wait in the queues
// this part owns, the two priority queues and the workers' mailboxes. The
// part also keeps the time of the pool's latest purge. Both halves of each
// pair it is in are here: resume()'s with a sleeping worker's last look
// (paused() with seq_cst), and begin_purge()'s with a worker that puts a job
// back while the pool is paused (purge_seen()).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "../../job.hpp"
#include "../config.hpp"
#include "../injector.hpp"
#include "../job.hpp"
#include "../sleep.hpp"

namespace weft::detail {

// Where a job is queued: for any worker (its deque, a lane or the injector,
// as pool::push() chooses), a priority queue, or one worker's mailbox (the
// last three are this part's queues).
struct destination {
  enum kind_t : std::uint8_t { any, high, low, mailbox } kind = any;
  std::size_t worker = 0;  // for mailbox
};
inline destination queue_of(priority p) noexcept {
  if (p == priority::high) return {destination::high};
  if (p == priority::low) return {destination::low};
  return {};
}

class attention {
 public:
  attention() = default;
  attention(const attention&) = delete;
  attention& operator=(const attention&) = delete;

  // One mailbox per worker slot; the pool's constructor, before any
  // thread starts.
  void make_mailboxes(std::size_t slots);

  // Whether a worker must look past the plain queues now. Relaxed: a hint.
  // The queues counted in the word publish their jobs themselves, and a
  // worker about to sleep looks at them directly (pool::search::work_for()).
  [[nodiscard]] bool wanted() const noexcept { return word_.load(std::memory_order_relaxed) != 0; }
  // Whether the pool is paused. Relaxed by default (a snapshot: pause() and
  // resume() are ordered by their mutex); seq_cst for a worker's last look
  // before it sleeps, the other half of resume()'s pair.
  [[nodiscard]] bool paused(std::memory_order order = std::memory_order_relaxed) const noexcept {
    return word_.load(order) >= paused_weight;
  }
  // False if the pool was paused already. Relaxed: workers see it at their
  // next find_work(); one that reads it late starts one more job, which it
  // could have started just before.
  bool pause();
  // False if the pool was not paused; else it wakes every sleeper of
  // `sleep` (wake_all()). seq_cst, a Dekker pair with a worker's
  // paused(seq_cst) after sleep_controller::prepare(): either it sees the
  // pool resumed, or wake_all() sees it asleep.
  bool resume(sleep_controller& sleep);
  // While a shrink waits for its leaving workers (pool::resize()): a busy
  // worker then looks at find_special(), which tells a leaving one to stop.
  // Relaxed: the sleeping ones are woken by the shrink itself.
  void begin_shrink() noexcept { word_.fetch_add(resizing_weight, std::memory_order_relaxed); }
  void end_shrink() noexcept { word_.fetch_sub(resizing_weight, std::memory_order_relaxed); }

  // The queues whose jobs the word counts.
  injector& high() noexcept { return high_; }
  injector& low() noexcept { return low_; }
  injector& mailbox(std::size_t worker) noexcept { return *mailboxes_[worker]; }
  [[nodiscard]] std::size_t mailboxes() const noexcept { return mailboxes_.size(); }
  // The seq_cst loads of the queues' sizes: a producer's pair (docs/sleep.md).
  [[nodiscard]] bool mail_waiting(std::size_t worker) const noexcept {
    return !mailboxes_[worker]->empty();
  }
  [[nodiscard]] bool priority_jobs_waiting() const noexcept {
    return !high_.empty() || !low_.empty();
  }
  // Queues j in q, one of the queues above. Counted before it is queued: a
  // thread that finds the job (the queue's seq_cst store publishes it) also
  // sees the word raised, so its find_work() looks past the plain queues.
  // Relaxed for that reason. Throws only std::bad_alloc, and then j was
  // neither queued nor counted.
  void push(injector& q, job* j) {
    word_.fetch_add(1, std::memory_order_relaxed);
    try {
      q.push(j);
    } catch (...) {
      word_.fetch_sub(1, std::memory_order_relaxed);
      throw;
    }
  }
  // The next job of q, one of the queues above, or nullptr. Relaxed: see
  // push().
  job* take(injector& q) noexcept {
    job* j = q.pop();
    if (j != nullptr) word_.fetch_sub(1, std::memory_order_relaxed);
    return j;
  }
  // Puts j, just taken from q, back at q's front (a job taken as the pool
  // was being paused); `counted`: q is one of the queues above, whose jobs
  // the word counts. False if there was no memory to put it back.
  bool put_back(injector& q, job* j, bool counted) noexcept {
    if (counted) word_.fetch_add(1, std::memory_order_relaxed);
    try {
      q.push_front(j);
    } catch (...) {
      if (counted) word_.fetch_sub(1, std::memory_order_relaxed);
      return false;
    }
    return true;
  }
  // A counted job that put_back() queued was taken out again (q.remove()).
  void forget_one() noexcept { word_.fetch_sub(1, std::memory_order_relaxed); }

  // Advances the process's purge_clock and records its time as this pool's
  // latest purge, as purge() begins.
  void begin_purge();
  // The time of the latest purge (0: none has), relaxed: for a batch that
  // checks now and then whether a purge began since it was made.
  [[nodiscard]] std::uint32_t last_purge() const noexcept {
    return last_purge_.load(std::memory_order_relaxed);
  }
  // The same, read by a worker that has just put a job back on a paused
  // pool. acq_rel RMW, the other half of begin_purge()'s: if this one comes
  // first in last_purge_'s order, the purge synchronises with it and finds
  // the job queued; if the purge's comes first, the time read here shows it,
  // and the worker drops the job itself (pool::hold_if_paused()).
  std::uint32_t purge_seen() noexcept {
    return last_purge_.fetch_add(0, std::memory_order_acq_rel);
  }

  // job::flags of a job purge() may drop: cancellable, stamped with the
  // purge_clock.
  [[nodiscard]] static std::uint32_t cancellable_flags() noexcept {
    // Relaxed: a job made after a purge() began, on its thread or one
    // ordered after it, carries a later time; one made concurrently may
    // carry either, and either outcome is what purge() promises such a job.
    return job_flags::cancellable |
           (purge_clock.load(std::memory_order_relaxed) << job_flags::purge_stamp_shift);
  }
  // Whether the job with these flags is a stamped cancellable one made
  // before the purge that began at purge_clock time `purge` (0: none has),
  // modulo 2^24.
  static bool made_before_a_purge(std::uint32_t flags, std::uint32_t purge) noexcept {
    constexpr std::uint32_t stamped = job_flags::cancellable;
    constexpr std::uint32_t kind = stamped | job_flags::unstamped;
    if (purge == 0 || (flags & kind) != stamped) return false;
    constexpr unsigned shift = job_flags::purge_stamp_shift;
    const std::uint32_t ahead = ((purge << shift) - (flags & job_flags::purge_stamp_mask)) >> shift;
    return ahead != 0 && ahead < (std::uint32_t{1} << (31 - shift));
  }

 private:
  // The word: paused_weight while paused, resizing_weight per shrink in
  // progress, plus one per job waiting in a priority queue or a mailbox.
  static constexpr std::uint64_t paused_weight = std::uint64_t{1} << 62;
  static constexpr std::uint64_t resizing_weight = std::uint64_t{1} << 40;
  // Read by every find_work(), written rarely: a line of its own start.
  alignas(cache_line) std::atomic<std::uint64_t> word_{0};
  // The purge_clock time at which this pool's latest purge began (0: none
  // has). Written by begin_purge() under mutex_, so it only grows.
  std::atomic<std::uint32_t> last_purge_{0};
  std::mutex mutex_;  // serialises pause(), resume() and begin_purge()
  injector high_{16};
  injector low_{16};
  std::vector<std::unique_ptr<injector>> mailboxes_;  // by worker index
};

}  // namespace weft::detail
