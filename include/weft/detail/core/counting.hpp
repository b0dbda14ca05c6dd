// The job counts kept per job cache (docs/waiting.md, "When is a pool
// idle?"): functions over the pool's parts, not members of the pool; `p` is
// the pool whose jobs are counted. Every job is counted against a cache (the
// spawning worker's own, the spawning outside thread's lane's, or the shared
// one of detail::accounting) in one of two epoch parities ("Waiting for what
// came before"). Counts only grow; the pool is idle when every count of
// spawned jobs is matched by finished ones. A worker counts its own spawns
// and finishes with plain stores and hands the finishes over when it runs
// out of work (flush()); everyone else counts with seq_cst RMWs, the half of
// the Dekker pairs whose other half is quiescent()'s seq_cst loads (and the
// destructor's close(), idle_waiters' increment). Included by weft/pool.hpp
// right after class pool; the front ends count through the doors.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

#include "../context.hpp"
#include "../job.hpp"

namespace weft {

struct pool::counting {
  // Counts n jobs (one, or a batch's) spawned by the calling thread, all in
  // one epoch. Throws pool_closed if the pool is closing and the caller is
  // not one of its jobs (the submissions are then already ended).
  static ticket count_spawn(pool& p, std::uint32_t n = 1) {
    detail::worker* self = detail::tls.self;
    if (self != nullptr && p.on_own_worker()) {
      // Relaxed: the job that spawns is running and counted, so the pool is
      // not idle before it finishes, and its finish (a seq_cst RMW after
      // this) makes this store visible to quiescent() (docs/waiting.md). Own
      // jobs may spawn while the pool closes.
      const unsigned e = spawn_epoch(p);
      std::atomic<std::uint64_t>& spawned = self->cache.spawned[e];
      spawned.store(spawned.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
      return {&self->cache, e, 0};
    }
    return count_outside_spawn(p, n);
  }
  // count_spawn() for a thread that is not a worker of this pool.
  static ticket count_outside_spawn(pool& p, std::uint32_t n);
  static ticket count_shared(pool& p, std::uint32_t n = 1);
  // Counts n jobs of a thread that is not our worker against c (a lane's
  // cache, or the shared one), in the right epoch.
  static ticket count_against(pool& p, detail::job_cache& c, std::uint32_t n);
  static void add_spawned(const pool& p, detail::job_cache& c, unsigned epoch, std::uint32_t n);
  // The parity a job spawned now by the calling thread belongs to: its
  // running job's, if that is a job of this pool; else the current epoch's.
  [[nodiscard]] static unsigned spawn_epoch(const pool& p) noexcept {
    unsigned e = 0;
    if (detail::running_scope::find(&p, e)) return e;
    return static_cast<unsigned>(p.accounting_.epoch() & 1);
  }
  // The last touch of the pool by a submitting thread that is not a worker.
  static void end_submission(const pool& p, const ticket& t) noexcept {
    if (t.submission == 0) return;
    std::atomic<std::uint64_t>& left = t.cache->left;
    if (p.accounting_.is_shared(*t.cache)) {
      // Release pairs with the acquire load in submissions_ended().
      left.fetch_add(t.submission, std::memory_order_release);
    } else {
      // A lane's thread is its only writer. Release: as above.
      left.store(left.load(std::memory_order_relaxed) + t.submission, std::memory_order_release);
    }
  }
  // Ends a submission when the scope that counted it is left, however.
  struct submission_guard {
    pool& owner;
    const ticket& t;
    submission_guard(pool& p, const ticket& tk) noexcept : owner(p), t(tk) {}
    submission_guard(const submission_guard&) = delete;
    submission_guard& operator=(const submission_guard&) = delete;
    ~submission_guard() { end_submission(owner, t); }
  };
  // n jobs counted against c in parity e have finished (any thread).
  static void count_finished(pool& p, detail::job_cache& c, unsigned e, std::uint64_t n) noexcept {
    // seq_cst: see idle_waiters::wake().
    c.finished[e].fetch_add(n, std::memory_order_seq_cst);
    p.idle_.wake();
  }
  // A job counted against c in parity e has finished on the calling thread.
  // A worker of this pool adds it to its own deferred count, handed over
  // with its heap jobs' (retire(), flush()): quiescent() sums every cache,
  // so which cache counts the finish does not matter, and the finishing
  // workers stop contending for the counter of the cache that spawned
  // (for an outside submitter, one line shared by every worker).
  static void count_job_finished(pool& p, detail::job_cache& c, unsigned e) noexcept {
    detail::worker* self = detail::tls.self;
    if (self != nullptr && p.on_own_worker()) {
      ++self->finished[e];
      return;
    }
    count_finished(p, c, e, 1);
  }
  // For work counted as a whole (a graph run): one job on the shared cache.
  static ticket enter(pool& p) { return count_shared(p); }
  static void leave(pool& p, unsigned e) noexcept {
    count_finished(p, p.accounting_.shared(), e, 1);
  }
  // Throws pool_closed if the pool is closing and the caller is not one of
  // its own jobs; the job counted by t is then counted finished.
  static void check_open(pool& p, const ticket& t);
  // Whether every counted job of the given parities has finished (a double
  // collect: see src/core/counting.cpp).
  [[nodiscard]] static bool quiescent(const pool& p, unsigned first_parity = 0,
                                      unsigned last_parity = 1) noexcept;
  [[nodiscard]] static std::uint64_t total(
      const pool& p, std::atomic<std::uint64_t> (detail::job_cache::*count)[2],
      unsigned first_parity, unsigned last_parity) noexcept;
  // Whether every submission by a thread that is not a worker has ended.
  [[nodiscard]] static bool submissions_ended(const pool& p) noexcept;

  // A heap job has run: free it and count it finished. A worker of this pool
  // batches both and hands them over when it runs out of work (flush()), or
  // every few jobs while a wait() needs the counts (flush_now_and_then()).
  static void retire(pool& p, detail::heap_job* j) noexcept {
    detail::worker* self = detail::tls.self;
    const unsigned e = j->epoch;
    if (self != nullptr && p.on_own_worker()) {
      if (j->home == &self->cache) {
        self->cache.release_local(j);
        ++self->finished[e];
      } else {
        self->free_remote(j);
      }
      return;
    }
    detail::job_cache& home = *j->home;
    home.release_remote(j, j);
    count_finished(p, home, e, 1);
  }

  // A heap job that never ran (its post failed): free it and count it
  // finished, so the counts still match.
  static void discard(pool& p, detail::heap_job* j) noexcept {
    detail::job_cache& home = *j->home;
    const unsigned e = j->epoch;
    home.release_remote(j, j);
    count_finished(p, home, e, 1);
  }

  // Owner only: hands over the counts worker w has deferred (and the jobs
  // of other caches it has chained); true if there were any. Wakes nobody.
  static bool hand_over_counts(detail::worker& w) noexcept {
    bool any = w.remote_head != nullptr;
    w.flush_remote();
    for (unsigned e = 0; e < 2; ++e) {
      if (w.finished[e] == 0) continue;
      any = true;
      // seq_cst: see idle_waiters::wake().
      w.cache.finished[e].fetch_add(std::exchange(w.finished[e], 0), std::memory_order_seq_cst);
    }
    w.jobs_since_flush = 0;
    return any;
  }

  // Owner only: hands over what worker w has batched and wakes blocked
  // waiters. Called whenever the worker runs out of work; it wakes them even
  // when nothing is left to hand over, since free_remote() may have counted
  // jobs finished earlier without waking anybody.
  static void flush(pool& p, detail::worker& w) noexcept {
    hand_over_counts(w);
    p.idle_.wake();
    signal_finish(p);
  }

  // Whether a waiter needs the workers' counts now
  // (idle_waiters::flush_requested()). A waiter's first 21 us of polling
  // ask for nothing, so that short waits do not make the workers write the
  // counters the waiter polls.
  [[nodiscard]] static bool flush_requested(const pool& p) noexcept {
    return p.idle_.flush_requested();
  }

  // Owner only, after each job: while a wait() needs the counts, hands them
  // over every flush_interval jobs. It wakes nobody: a blocked waiter
  // re-checks on its own every millisecond while the pool is busy
  // (block_until), which costs far less than a wake-up per hand-over.
  // Always inlined: as a member of pool it was inlined into the help loops
  // (a join's wait in the parallel algorithms); as a static function here
  // GCC called it instead, and parallel_loops/balanced_1e5/for_each went
  // from 24 to 39 us in paired runs (scripts/ab.sh, 8 rounds, twice; an A/A
  // run moved it by 1.08). With the attribute it measured 0.94 and 0.97.
  [[gnu::always_inline]] static void flush_now_and_then(pool& p, detail::worker& w) noexcept {
    if (!flush_requested(p)) return;
    if (++w.jobs_since_flush >= flush_interval) hand_over_counts(w);
    signal_finish(p);
  }
  // After a job, while outside threads wait in wait_until(): tells them to
  // re-check their predicates.
  static void signal_finish(pool& p) noexcept { p.finish_signal_.signal(); }
  static constexpr std::uint32_t flush_interval = 32;
  // Counts a job that `self`, the calling thread's worker of this pool,
  // makes for its own deque, as pool::posting::post_own() counts its own; returns the
  // epoch parity. For a job in memory of the front end's own (a
  // task_group's slot), which then goes to pool::posting::push_own().
  static unsigned count_own_spawn(const pool& p, detail::worker& self) noexcept {
    const unsigned e = spawn_epoch(p);
    // Relaxed: as in count_spawn().
    std::atomic<std::uint64_t>& spawned = self.cache.spawned[e];
    spawned.store(spawned.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return e;
  }
  // Takes back count_own_spawn() for a job that was never queued.
  static void uncount_own_spawn(detail::worker& self, unsigned e) noexcept {
    std::atomic<std::uint64_t>& spawned = self.cache.spawned[e];
    spawned.store(spawned.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  }
};

}  // namespace weft
