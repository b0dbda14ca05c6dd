// The narrow seam between the pool and the front ends built on it
// (docs/design.md, "Keeping the pool small"), from any thread. A front end
// posts jobs, counts work in and out so that pool::wait() and the destructor
// see it, reports errors, and waits the way the calling thread should; it
// reaches nothing else of the pool. What a front end does on one of the
// pool's own workers (join's and task_group's fast paths) goes through the
// second door, detail/local.hpp. Every front end uses it: futures,
// continuations, batches, graphs, flows, timers (src/timer.cpp), the parallel
// algorithms (stand_in), join, task_group, coroutines and MPI.
#pragma once
// Included by weft/pool.hpp right after class pool, before the front ends
// it exports, which use the door; front ends include detail/scheduler.hpp.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <utility>

#include "context.hpp"
#include "job.hpp"

namespace weft::detail {

struct scheduler {
  // Counts one unit of work against p (thrown pool_closed once its
  // destruction has begun, unless called from one of p's jobs). The unit
  // ends with leave(p, epoch); the submission, the caller's own use of p,
  // ends with end_submission() once the caller stops touching p.
  struct unit {
    pool::ticket ticket;
    [[nodiscard]] unsigned epoch() const noexcept { return ticket.epoch; }
  };
  static unit enter(pool& p) { return unit{pool::counting::enter(p)}; }
  static void end_submission(pool& p, const unit& u) noexcept {
    pool::counting::end_submission(p, u.ticket);
  }
  // Ends the submission a count_spawn() ticket holds (a guard's job).
  static void end_submission(pool& p, const pool::ticket& t) noexcept {
    pool::counting::end_submission(p, t);
  }
  static void leave(pool& p, unsigned epoch) noexcept { pool::counting::leave(p, epoch); }

  // Queues jobs for any worker (the caller's deque on a worker of p, else a
  // lane or the injector); returns how many were queued (fewer only when a
  // queue could not grow: the caller runs the rest itself).
  static std::size_t publish(pool& p, job* const* jobs, std::size_t n) noexcept {
    return p.push_many(jobs, n);
  }

  // publish() for a thread that nothing else keeps p alive for (a thread
  // that sets a future, say): the push counts as a submission, so p's
  // destructor waits until it is done. Returns 0 when p is closing or the
  // submission cannot be counted (the caller runs the jobs itself).
  static std::size_t publish_guarded(pool& p, job* const* jobs, std::size_t n) noexcept {
    if (on_worker_of(p)) return publish(p, jobs, n);
    pool::ticket t{};
    try {
      t = pool::counting::count_spawn(p);
    } catch (...) {
      return 0;
    }
    const pool::counting::submission_guard guard{p, t};  // destroyed last: our last touch of p
    const std::size_t pushed = p.push_many(jobs, n);
    pool::counting::count_finished(p, *t.cache, t.epoch, 1);
    return pushed;
  }

  // One job, or n, counted as the calling thread's spawns (its running
  // job's epoch on a worker or in one of p's jobs; else an outside
  // submission, ended by a guard's destructor). Throws pool_closed once p's
  // destruction has begun, unless called from one of p's jobs.
  using ticket = pool::ticket;
  using submission_guard = pool::counting::submission_guard;
  static ticket count_spawn(pool& p) { return pool::counting::count_spawn(p); }
  // n jobs (a batch's) counted at once, in one epoch.
  static ticket count_spawn(pool& p, std::uint32_t n) { return pool::counting::count_spawn(p, n); }
  // n jobs counted against c in parity epoch have finished.
  static void count_finished(pool& p, job_cache& c, unsigned epoch, std::uint64_t n) noexcept {
    pool::counting::count_finished(p, c, epoch, n);
  }
  // One job counted against c in parity epoch has finished on the calling
  // thread (a worker of p adds it to its own deferred count).
  static void count_job_finished(pool& p, job_cache& c, unsigned epoch) noexcept {
    pool::counting::count_job_finished(p, c, epoch);
  }
  // The epoch parity a job spawned now by the calling thread belongs to.
  [[nodiscard]] static unsigned spawn_epoch(const pool& p) noexcept {
    return pool::counting::spawn_epoch(p);
  }
  // Queues j, counted by the caller, for any worker (pool::push()).
  static void push(pool& p, job* j) { p.push(j); }
  // A heap job C{args...}, counted and queued for any worker under p's bound
  // (pool::posting::post()); C is a posted callable (see pool::posting::run_posted()).
  template <class C, class... Args>
  static void post(pool& p, Args&&... args) {
    pool::posting::post<C>(p, std::forward<Args>(args)...);
  }
  // Called by a job that purge() may drop, as it starts: gives back its slot
  // of bounded submission; true if it was dropped and must cancel.
  [[nodiscard]] static bool cancelled_at_start(pool& p, const job* j) noexcept {
    return pool::posting::cancelled_at_start(&p, j);
  }

  static void report_error(pool& p, std::exception_ptr e) noexcept { p.report_error(std::move(e)); }

  // Jobs made one at a time (the batches of weft/batch.hpp).
  // C, run detached: f's exception goes to the error path; purge() may drop it.
  template <class F>
  using detached_call = pool::posting::detached_call<F>;
  // What a posted callable returns (nothing left to do once it is gone).
  using no_epilogue = pool::posting::no_epilogue;
  // The run function of a heap job holding a posted callable C.
  template <class C>
  [[nodiscard]] static constexpr auto run_posted() noexcept {
    return &pool::posting::run_posted<C>;
  }
  // A heap job from the cache a ticket counted against; freed, counted
  // finished, with discard() if it is never queued.
  [[nodiscard]] static heap_job* allocate_job(pool& p, job_cache& from) {
    return p.accounting_.allocate_job(from);
  }
  static void discard(pool& p, heap_job* j) noexcept { pool::counting::discard(p, j); }
  // Stores C{args...} in j (allocated and counted for it) and makes it
  // runnable; if that throws, j is discarded.
  template <class C, class... Args>
  static void fill_posted(pool& p, heap_job* j, Args&&... args) {
    pool::posting::fill_posted<C>(p, j, std::forward<Args>(args)...);
  }
  // A future's state S of callable g, counted by t (pool::posting::make_state()).
  template <class S, class G>
  static S* make_state(pool& p, const ticket& t, G&& g) {
    return pool::posting::make_state<S>(p, t, std::forward<G>(g));
  }
  // A hint, read relaxed: whether p may be paused now (a job that begins as
  // it is read is one job late, as for a job taken just before).
  [[nodiscard]] static bool maybe_paused(const pool& p) noexcept { return p.attention_.paused(); }
  // A hint, read relaxed as maybe_paused(): whether a job of p with these
  // flags was made before a purge of p that has begun since.
  [[nodiscard]] static bool purged_since(const pool& p, std::uint32_t flags) noexcept {
    return attention::made_before_a_purge(flags, p.attention_.last_purge());
  }
  // j, taken by a worker of p as p was being paused, goes back to the
  // injector's front (or is dropped if a purge missed it): nullptr. Returns
  // j when p is not paused after all, or there is no memory to hold it.
  [[nodiscard]] static job* hold_if_paused(pool& p, job* j) noexcept {
    return p.hold_if_paused(j, p.queues_.shared_queue());
  }
  // n jobs (or a batch's callables) dropped without running (stats()).
  static void count_cancelled(pool& p, std::size_t n) noexcept { p.counters_.add_cancelled(n); }

  // Whether p's destruction has begun (accounting::closing(), seq_cst as
  // check_open()'s load).
  [[nodiscard]] static bool closing(const pool& p) noexcept { return p.accounting_.closing(); }
  // Where p keeps its timer service (src/timer.cpp): set once, by the first
  // timer, while the caller holds a unit of p; stopped and released by p's
  // destructor through stop_timers().
  [[nodiscard]] static std::atomic<timer_service*>& timer_slot(pool& p) noexcept {
    return p.timers_;
  }

  // l.notify(l.context) is called by each worker of p that runs out of
  // work, at the start of its idle search, until remove_idle_listener(p, l)
  // returns (which waits for a call under way). Added while a worker is
  // going idle, l may miss that one. Throws std::bad_alloc.
  static void add_idle_listener(pool& p, idle_listener& l) { p.sleep_.add_listener(l); }
  static void remove_idle_listener(pool& p, idle_listener& l) noexcept {
    p.sleep_.remove_listener(l);
  }
  // A hint, stale as soon as it is read: whether a worker of p is searching
  // for work or asleep.
  [[nodiscard]] static bool someone_idle(const pool& p) noexcept { return p.sleep_.someone_idle(); }

  [[nodiscard]] static bool sequential(const pool& p) noexcept { return p.sequential(); }
  // What a future's state of p keeps to tell p from a later pool at the same
  // address (future_state::owner_life).
  [[nodiscard]] static std::uint32_t life(const pool& p) noexcept { return p.life(); }
  // The most workers p may have (per-worker state is sized by it: a pool
  // may grow while a front end's state lives).
  [[nodiscard]] static std::size_t workers(const pool& p) noexcept { return p.max_size(); }
  // Whether p records a trace: then the front end adds its tasks' slices and
  // edges to current_trace (detail/trace.hpp, docs/tracing.md).
  [[nodiscard]] static bool traced(const pool& p) noexcept { return p.traced(); }
  // Whether the calling thread is one of p's workers.
  [[nodiscard]] static bool on_worker_of(const pool& p) noexcept {
    return tls.owner == &p && tls.self != nullptr;
  }
  // The calling thread's worker index in p, if it is one of p's workers.
  [[nodiscard]] static std::optional<std::size_t> worker_index(const pool& p) noexcept {
    const context& ctx = tls;
    if (ctx.owner == &p && ctx.self != nullptr) return ctx.self->index;
    return std::nullopt;
  }

  // Waits until done() holds the way the calling thread should
  // (docs/waiting.md): a worker (of p, or of another pool) runs its own
  // pool's jobs meanwhile, a sequential pool's waiter runs p's jobs, and any
  // other thread calls block().
  template <class Done, class Block>
  static void wait_for(pool& p, Done& done, Block&& block) {
    pool::waits::wait_on(p, done, std::forward<Block>(block));
  }
  // wait_for() where a thread that runs jobs naps with nap(d) when it has
  // none, as in local::help_until().
  template <class Done, class Block, class Nap>
  static void wait_for(pool& p, Done& done, Block&& block, Nap&& nap) {
    pool::waits::wait_on(p, done, std::forward<Block>(block), std::forward<Nap>(nap));
  }
  // For its lifetime, the calling thread stands in for one of p's workers
  // if it can (held()): see pool::waits::stand_in_scope.
  using stand_in = pool::waits::stand_in_scope;

  // p.submit(f) for a call that has begun and whose caller waits for it:
  // purge() never drops the job and pool_options::capacity never holds it
  // up (a parallel algorithm's root job, which must run whoever runs it).
  template <class F>
  static auto submit_kept(pool& p, F&& f) {
    return pool::posting::submit_checked<true>(p, pool::destination{}, std::forward<F>(f));
  }

  // Waits for a latch the way wait_for does.
  static void await(pool& p, const latch& l) { pool::waits::await(p, l); }
  // await() with a deadline; true if the latch was set.
  static bool await_until(pool& p, const latch& l, std::chrono::steady_clock::time_point deadline) {
    return pool::waits::await_until(p, l, deadline);
  }
  // job::flags of a job purge() may drop (stamped with the purge clock).
  [[nodiscard]] static std::uint32_t cancellable_flags() noexcept {
    return attention::cancellable_flags();
  }
};

}  // namespace weft::detail
