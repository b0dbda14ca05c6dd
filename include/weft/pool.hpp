// weft::pool: the work-stealing scheduler every front end runs on.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "detail/backoff.hpp"
#include "detail/clock.hpp"
#include "detail/config.hpp"
#include "detail/context.hpp"
#include "detail/core/accounting.hpp"
#include "detail/core/attention.hpp"
#include "detail/core/bound.hpp"
#include "detail/core/counters.hpp"
#include "detail/core/errors.hpp"
#include "detail/core/finish_signal.hpp"
#include "detail/core/guests.hpp"
#include "detail/core/idle_waiters.hpp"
#include "detail/core/queues.hpp"
#include "detail/core/roster.hpp"
#include "detail/fault.hpp"
#include "detail/injector.hpp"
#include "detail/job.hpp"
#include "detail/lane.hpp"
#include "detail/latch.hpp"
#include "detail/sleep.hpp"
#include "detail/trace.hpp"
#include "errors.hpp"
#include "future.hpp"
#include "job.hpp"           // IWYU pragma: export
#include "pool_options.hpp"  // IWYU pragma: export
#include "stats.hpp"         // IWYU pragma: export
#include "topology.hpp"      // IWYU pragma: export

namespace weft {

class graph;
class timer;  // weft/timer.hpp

namespace detail {
struct local;
struct scheduler;
class timer_service;  // src/timer.cpp
// src/timer.cpp: stops the pool's timer service s, if any (its pending
// timers are cancelled, its thread joined); with `release`, also drops the
// pool's reference to it. Called by the pool's destructor only.
void stop_timers(timer_service* s, bool release) noexcept;
template <class R, class F>
struct future_job;
class worker_start;  // pinning and on_worker_start (detail/worker_start.hpp)
}  // namespace detail

/// A work-stealing pool of worker threads: the scheduler every job of weft
/// runs on (futures, join, task groups, graphs, flows, algorithms). The
/// destructor finishes all submitted work, then joins the workers.
class pool {
 public:
  /// A pool with the default options: one worker per usable CPU.
  pool() : pool(pool_options{}) {}
  /// Starts options.threads workers (none in sequential mode).
  explicit pool(pool_options options);
  ~pool();
  pool(const pool&) = delete;
  pool& operator=(const pool&) = delete;
  pool(pool&&) = delete;
  pool& operator=(pool&&) = delete;

  /// Runs f() on the pool and forgets it. An exception it throws goes to
  /// on_error, or is rethrown by a later wait(). Throws pool_closed once the
  /// pool's destruction has begun (except from the pool's own jobs).
  template <class F>
  void spawn(F&& f);

  /// Runs f() on the pool; the future holds its result or its exception.
  template <class F>
  [[nodiscard]] future<detail::call_result_t<std::decay_t<F>&>> submit(F&& f);

  /// spawn(f, args...) and submit(f, args...) run f(args...), binding the
  /// arguments as std::async does: f and args are decay-copied when called
  /// here and passed to f as rvalues; std::ref(x) passes x by reference.
  template <class F, class... Args>
  requires(sizeof...(Args) > 0 &&
           !std::is_same_v<std::decay_t<F>, priority>) void spawn(F&& f, Args&&... args);
  /// submit(f) of f(args...), the arguments bound as spawn(f, args...) binds them.
  template <class F, class... Args>
  requires(sizeof...(Args) > 0 && !std::is_same_v<std::decay_t<F>, priority>)
      [[nodiscard]] future<detail::call_result_t<std::decay_t<F>, std::decay_t<Args>...>> submit(
          F&& f, Args&&... args);

  /// spawn(f) at priority p: wherever a worker chooses among queued jobs, a
  /// higher priority goes first, with a rule that keeps a steady stream of
  /// higher ones from starving the rest (docs/control.md, "Priorities").
  /// priority::normal is spawn(f). In sequential mode jobs run in
  /// submission order whatever their priority.
  template <class F>
  void spawn(priority p, F&& f);
  /// submit(f) at priority p (see spawn(priority, f)).
  template <class F>
  [[nodiscard]] future<detail::call_result_t<std::decay_t<F>&>> submit(priority p, F&& f);

  /// Runs f() on worker `worker` (0 <= worker < size()) and on no other
  /// thread: the job waits in that worker's mailbox, which thieves and
  /// helping threads skip, and jobs of one mailbox start in the order they
  /// were sent. For thread-affine work and per-worker state
  /// (docs/control.md, "A job on a chosen worker"). Throws usage_error for
  /// an index out of range (always in sequential mode, which has no workers).
  /// Under a full bound (pool_options::capacity) it is never run by the
  /// sender: with run_here or a callable policy it waits for room.
  template <class F>
  void spawn_on(std::size_t worker, F&& f);
  /// submit(f) on worker `worker` (see spawn_on).
  template <class F>
  [[nodiscard]] future<detail::call_result_t<std::decay_t<F>&>> submit_on(std::size_t worker,
                                                                          F&& f);

  /// Stops starting jobs: the workers finish the jobs they are running and
  /// take no new ones until resume() (no job submitted after pause()
  /// returned starts before resume(); one a worker was taking just then may
  /// start); submission goes on as before. A
  /// running job that waits for work not yet started waits until resume()
  /// (docs/control.md, "Pause, resume and purge"). Any thread; pausing a
  /// paused pool does nothing. Throws usage_error in sequential mode.
  void pause();
  /// Lets the workers start jobs again; resuming a running pool does nothing.
  void resume();
  /// Whether the pool is paused.
  [[nodiscard]] bool paused() const noexcept;
  /// Drops every queued job that has not started and that purge may drop:
  /// the jobs of spawn, submit (their futures throw job_cancelled),
  /// spawn_on, submit_on, spawn_all, submit_all and task_groups (the group's
  /// wait() throws job_cancelled); the other front ends' queued tasks stay
  /// (docs/control.md). Returns how many it dropped; they are counted in
  /// pool_stats::cancelled. Any thread, paused or not; on a running pool a
  /// job a worker takes meanwhile may start instead. On a paused pool, a
  /// job a worker was taking as the pool paused is dropped by that worker
  /// (counted in pool_stats::cancelled, not in the return).
  std::size_t purge();

  /// Starts a run of g (weft/graph.hpp); the future is ready when every task
  /// has finished or been skipped, and rethrows the run's first exception.
  /// If g is still running, the run is queued and starts after the runs
  /// called before it (docs/graph.md, "Queued runs"). Throws graph_error if
  /// called from inside one of g's own tasks, if g is moved from, or has a
  /// cycle.
  [[nodiscard]] future<void> run(graph& g);
  /// Runs g n times one after another (run_until: until pred(), called after
  /// each run on the thread that finished it, returns true; at least once),
  /// queued as run() is. The future is ready after the last run, or holds
  /// the first exception (a run's or pred's; the sequence stops there);
  /// its cancel() and g.cancel() end the sequence with run_cancelled. No
  /// thread waits between runs. docs/graph.md.
  [[nodiscard]] future<void> run_n(graph& g, std::size_t n);
  /// Runs g until pred() returns true after a run (see run_n).
  [[nodiscard]] future<void> run_until(graph& g, std::function<bool()> pred);

  /// Returns when every job submitted before the call, and every job those
  /// spawned, has finished (jobs submitted meanwhile by other threads do not
  /// hold it up; docs/waiting.md); then rethrows the oldest exception a
  /// detached job left, if any. Throws usage_error when called from one of
  /// this pool's own jobs, or from an element function of a parallel
  /// algorithm on this pool (it would wait for itself): wait on a future or
  /// a task_group there instead.
  void wait();

  /// wait() for at most `timeout`: true if the pool became idle (then, as
  /// wait(), it rethrows the oldest exception a detached job left), false if
  /// the time ran out first (the jobs go on). It looks at the clock at least
  /// every millisecond, and between jobs when it runs them. Any rep and
  /// period, converted without overflow (docs/waiting.md, "Timed waits"): a
  /// timeout too long to represent (max(), +infinity) is wait(), a zero or
  /// negative one only looks. Same errors as wait(), and usage_error for a
  /// NaN timeout.
  template <class Rep, class Period>
  bool wait_for(const std::chrono::duration<Rep, Period>& timeout) {
    return wait_until_idle(detail::deadline_after(timeout, "weft::pool::wait_for"));
  }

  /// Runs this pool's jobs on the calling thread until pred() holds. On a
  /// worker of another pool it runs that pool's jobs instead (and this
  /// pool's too, if this pool is sequential). A thread that is not a worker
  /// runs jobs while it holds the pool's helper slot (one thread at a time;
  /// its jobs see this_worker::index() == max_size()); with no job to run, or
  /// without the slot, it sleeps and re-checks pred() whenever a worker
  /// finishes a job, and at least every 64 ms (docs/waiting.md).
  template <class P>
  void wait_until(P&& pred);

  /// Worker threads (0 in sequential mode).
  [[nodiscard]] std::size_t size() const noexcept { return roster_.size(); }
  /// The most workers resize() may give the pool (pool_options::max_threads;
  /// 0 in sequential mode).
  [[nodiscard]] std::size_t max_size() const noexcept { return roster_.slots(); }
  /// How many distinct values this_worker::index() takes in this pool's
  /// jobs: max_size() + 1 (the workers, then the helper slot), or 1 in
  /// sequential mode. Fixed for the pool's life, so per-worker state sized
  /// with it stays valid across resize().
  [[nodiscard]] std::size_t slots() const noexcept { return sequential() ? 1 : max_size() + 1; }
  /// Changes the number of workers to n, 1 <= n <= max_size(), and returns
  /// once the pool has n: new workers have started (and run their pinning
  /// and on_worker_start), leaving ones have finished the job they were
  /// running and stopped (their on_worker_stop has run). Jobs queued for a
  /// leaving worker (its deque and its spawn_on mailbox) go to the others:
  /// none is lost or runs twice. Any thread that is not running one of this
  /// pool's jobs; concurrent calls take turns. Throws usage_error for n = 0
  /// (a pool cannot become sequential), n > max_size(), a sequential pool,
  /// or a call from one of the pool's jobs (it could wait for itself); the
  /// exception of a new worker's on_worker_start, after stopping the workers
  /// this call started (docs/control.md, "Resizing").
  void resize(std::size_t n);
  /// pool_options::name.
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// The pool's counters so far.
  [[nodiscard]] pool_stats stats() const;
  /// Starts the per-worker counters of stats() (worker_stats) afresh; the
  /// pool-wide ones (job_slots, handoffs, lanes, ...) are not reset. Any
  /// thread, at any time.
  void reset_stats();

  /// Writes the trace recorded so far to `path` (docs/tracing.md); the pool
  /// goes on recording. Throws usage_error when the pool records no trace
  /// (pool_options::trace and WEFT_TRACE both empty), std::system_error when
  /// the file cannot be written.
  void write_trace(const std::string& path) const;
  /// Whether the pool records a trace.
  [[nodiscard]] bool traced() const noexcept { return tracer_ != nullptr; }

  /// Batches (weft/batch.hpp): spawn(f) / submit(f) for every callable of a
  /// range, published to the workers at once with one wake-up.
  /// spawn_all of a range that knows its size, of 32 callables or more,
  /// makes them into one array (copies of a container's, say) and queues
  /// one job for them all, which hands half of what is left to an idle
  /// worker, over and over (docs/continuations.md, "Batches"); each
  /// callable still counts as one job for pause(), purge(), stats() and
  /// the error path. Other batches get a job per callable.
  template <class Range>
  void spawn_all(Range&& callables);
  /// submit() of every callable of the range: a std::vector of their
  /// futures, in the range's order.
  template <class Range>
  [[nodiscard]] auto submit_all(Range&& callables);

  /// Timers (weft/timer.hpp, docs/control.md "Timers"): runs f() on the pool
  /// once `delay` has passed. f may take a weft::timer& instead: its own
  /// timer. The returned handle can cancel it; dropping it does not.
  /// Nothing spins while a timer waits: one timer thread per pool, started
  /// by the first timer, sleeps until the earliest deadline. Its job is an
  /// ordinary job once it fires: pool.wait() waits for the timers that have
  /// fired, not for those still waiting. Any rep and period, converted
  /// without overflow: a delay too long to represent (max(), +infinity)
  /// never comes (the timer waits, pending, until cancelled or the pool is
  /// destroyed), a zero or negative one (-infinity) fires at once. Throws
  /// pool_closed as spawn does, usage_error for a NaN delay.
  template <class Rep, class Period, class F>
  timer spawn_after(const std::chrono::duration<Rep, Period>& delay, F&& f);
  /// As spawn_after, once `when` has come (any clock; a steady_clock time is
  /// used as is, another clock's is converted once, now). A time too far
  /// ahead to represent (max() of any clock, +infinity) never comes; a past
  /// one (min() of any clock, -infinity) fires at once; NaN is a
  /// usage_error.
  template <class Clock, class Duration, class F>
  timer spawn_at(const std::chrono::time_point<Clock, Duration>& when, F&& f);
  /// As spawn_after, every `period`, the first time one period from now;
  /// throws usage_error unless period > 0 (NaN included). A period too long
  /// to represent (max(), +infinity) never comes round: the timer never
  /// fires, and stays pending until cancelled.
  template <class Rep, class Period, class F>
  timer spawn_every(const std::chrono::duration<Rep, Period>& period, F&& f);

 private:
  friend class job;  // runs or drops a job handed to an overflow callable
  // How many callables a queued job stands for: a batch piece's span, else 1.
  static std::size_t callables_in(detail::job* j) noexcept;

  // The two doors every front end is to reach the pool through
  // (detail/scheduler.hpp from any thread, detail/local.hpp on a worker).
  friend struct detail::scheduler;
  friend struct detail::local;

  // Where a job is queued (detail/core/attention.hpp).
  using destination = detail::destination;
  static destination queue_of(priority p) noexcept { return detail::queue_of(p); }
  // Throws usage_error unless worker < size().
  [[nodiscard]] destination mailbox_of(std::size_t worker) const;

  [[nodiscard]] bool sequential() const noexcept { return roster_.slots() == 0; }

  // The calling (outside) thread's lane into this pool, or nullptr when all
  // lanes are taken and the injector has to serve.
  detail::lane* my_lane() { return queues_.my_lane(id_); }
  [[nodiscard]] bool on_own_worker() const noexcept { return detail::tls.owner == this; }

  // The job counts kept per job cache (detail/core/counting.hpp,
  // src/core/counting.cpp), and how one job is counted.
  struct counting;
  using ticket = detail::ticket;
  // wait(), or with a deadline wait_for(); false if the deadline came first.
  bool wait_until_idle(std::optional<std::chrono::steady_clock::time_point> deadline);
  // The destructor's drain: waits, the way the calling thread should, until
  // every counted job has finished.
  void drain_all();

  // How a callable becomes a job the pool runs: allocated, counted and
  // queued (detail/core/posting.hpp).
  struct posting;
  // Owner only: the job on top of self's deque, for self to run now; the
  // private items left below it are published first (docs/deque.md, "Idle
  // workers"), so that they wait for no longer than the job that pushed them.
  detail::job* take_own(detail::worker& self) noexcept {
    detail::job* j = self.deque.pop();
    if (j != nullptr && self.deque.publish_all()) sleep_.new_work();
    return j;
  }
  // A priority queue or a mailbox (src/control.cpp).
  void push_special(detail::job* j, destination d);
  // Whether the calling thread is running one of our jobs (on a worker, or
  // helping): its submissions are never held up by the bound.
  [[nodiscard]] bool in_own_job() const noexcept {
    unsigned e = 0;
    return on_own_worker() || detail::running_scope::find(this, e);
  }
  // Makes a job visible to the workers (or to the waiters, sequentially).
  void push(detail::job* j);
  // push() for n jobs, published at once with one wake-up. Returns how many
  // were pushed (jobs[0, k)): n, or 0 when a queue could not grow for lack
  // of memory.
  std::size_t push_many(detail::job* const* jobs, std::size_t n) noexcept;
  // The next job for a worker (self) or a helping thread (nullptr).
  detail::job* find_work(detail::worker* self) {
    if (attention_.wanted()) [[unlikely]]
      return find_special(self);
    return find_normal(self);
  }
  // j (or nullptr) was taken from q, or for the injector from any plain
  // queue, as the pool was being paused: puts it back at q's front and
  // returns nullptr; drops it instead if purge() may have missed it (a
  // purge has begun since j was made). Returns j if the pool is not paused,
  // or if there is no memory to put it back.
  detail::job* hold_if_paused(detail::job* j, detail::injector& q) noexcept;
  // Owner only, from hold_if_paused(): drops the jobs of w's deque made
  // before the purge that began at `purge`, which it may have missed (a
  // batch taken with the job held back, pushed there after the purge
  // looked). `purge` was read by hold_if_paused()'s RMW, after those pushes:
  // a purge that begins later sees them.
  void drop_missed_by_purge(detail::worker& w, std::uint32_t purge) noexcept;
  // After a worker of this pool dropped a job outside a purge: hands over
  // the finish it deferred, since it may be about to sleep.
  void hand_over_drops() noexcept;
  // find_work() while the pool is paused or a priority queue or mailbox has
  // jobs (src/control.cpp): the order of docs/control.md, "Priorities".
  detail::job* find_special(detail::worker* self);
  // The worker's own deque, then the lanes, the injector and the others'
  // deques; a job taken from elsewhere is held back if the pool was paused
  // meanwhile.
  detail::job* find_normal(detail::worker* self);
  detail::job* find_elsewhere(detail::worker* self);
  // The looks of a worker's search for work and of its last look before it
  // sleeps (src/core/search.hpp).
  struct search;
  bool all_queues_empty() const noexcept;
  // The injector and the lanes only: what threads outside the pool push to.
  [[nodiscard]] bool outside_queues_empty() const noexcept;
  void execute(detail::job* j) noexcept;
  // execute() when the pool is traced: the job's slice goes to this
  // thread's ring.
  void traced_execute(detail::job* j) noexcept;
  // A sequential pool's job, run on the waiting thread.
  void run_sequential(detail::job* j) noexcept;

  // The waits: how a thread waits for something the pool runs, running its
  // jobs meanwhile (detail/core/wait.hpp, src/core/wait.cpp).
  struct waits;
  void report_error(std::exception_ptr error) noexcept { errors_.report(std::move(error)); }
  void rethrow_pending_error() { errors_.rethrow_pending(); }
  // start: the pinning and start hook to run first, or nullptr.
  void worker_main(detail::worker& w, detail::worker_start* start);
  // Starts the threads of workers [from, to); with `setup`, waits until
  // each has run its pinning and start hook and rethrows the first failure
  // (the threads that started are left running).
  void start_workers(std::size_t from, std::size_t to, detail::worker_start* setup);
  // resize() down: workers [to, from) leave; returns once their threads
  // have ended (src/control.cpp).
  void shrink(std::size_t from, std::size_t to) noexcept;
  // Whether worker w is to leave the pool (resize()).
  [[nodiscard]] bool leaving(const detail::worker& w,
                             std::memory_order order = std::memory_order_relaxed) const noexcept {
    return roster_.leaving(w, order);
  }
  // A leaving worker, after its last job: hands the jobs in its deque and
  // mailbox to the others (the injector).
  void retire(detail::worker& w) noexcept;
  // Moves the jobs in worker i's mailbox to the injector: its worker has
  // left (or is leaving), and any worker may run them now.
  void rescue_mail(std::size_t i) noexcept;
  // Moves jobs to the injector and wakes a worker for them; a job that no
  // memory can be found to queue runs here instead.
  void requeue(detail::job* const* jobs, std::size_t n) noexcept;
  // Searches, then sleeps; returns a job, or nullptr when the pool stops.
  detail::job* idle(detail::worker& w);

  // Read-mostly after construction.
  const std::uint64_t id_;  // unique over the process's lifetime
  // The low half of id_, which a future's state keeps beside the pool's
  // address (future_state::owner_life) and the registry of live pools
  // holds (detail/visit.hpp): a pool made later at the same address has
  // another, until 2^32 pools later.
  [[nodiscard]] std::uint32_t life() const noexcept { return static_cast<std::uint32_t>(id_); }
  std::string name_;
  const bool waiters_help_;  // pool_options::waiters_help
  // Null unless the pool is traced (docs/tracing.md); made before the
  // workers start, destroyed after they stop.
  std::unique_ptr<detail::tracer> tracer_;
  // The worker slots, how many run and which are to leave, and the hooks
  // (resize() in src/control.cpp). Slots from size() up hold no thread,
  // except a leaving one while resize() waits for it.
  detail::roster roster_;

  // Outside threads submit through their lane (lock-free) or, when all lanes
  // are taken, through the injector; a sequential pool's FIFO.
  detail::queues queues_;
  detail::sleep_controller sleep_;

  // Whether the pool closes, the epochs, the shared job cache.
  detail::accounting accounting_;
  // The threads waiting for jobs to finish, and how runners wake them.
  detail::idle_waiters idle_;
  // Threads that are not workers running this pool's jobs (help_until),
  // which the destructor waits for, and the helper slot
  // (waits::helper_scope).
  detail::guests guests_;
  // Outside threads in wait_until() and wait_until()'s napping workers,
  // told of finished jobs (signal_finish()).
  detail::finish_signal finish_signal_;

  // Pause, priorities, mailboxes and the latest purge (src/control.cpp):
  // what makes find_work() look past the plain queues.
  detail::attention attention_;

  // Bounded submission (pool_options::capacity, on_full).
  detail::bound bound_;

  // Exceptions of detached jobs not yet rethrown by wait().
  detail::error_sink errors_;

  // What stats() reports besides the workers' own counters.
  detail::counters counters_;

  // The timer service (src/timer.cpp), made by the first timer; stopped and
  // released by the destructor (detail::stop_timers).
  std::atomic<detail::timer_service*> timers_{nullptr};
};

/// The pool join() uses outside any pool: created on first use with default
/// options, destroyed at exit.
pool& default_pool();

}  // namespace weft

// The counts, the posting of jobs and the waits, which the definitions
// below use.
#include "detail/core/counting.hpp"  // IWYU pragma: export
#include "detail/core/posting.hpp"   // IWYU pragma: export
#include "detail/core/wait.hpp"      // IWYU pragma: export

namespace weft {

// ---------------------------------------------------------------------------

template <class F>
void pool::spawn(F&& f) {
  posting::check_callable<F>();
  // Nothing more to report when f cannot be called.
  if constexpr (std::is_invocable_v<std::decay_t<F>&>) {
    posting::post<posting::detached_call<std::decay_t<F>>>(*this, this, std::forward<F>(f));
  }
}

template <class P>
void pool::wait_until(P&& pred) {
  auto done = [&pred] { return static_cast<bool>(pred()); };
  pool* own = detail::tls.owner;
  // A worker of a pool that has workers (this one or another).
  const bool worker = own != nullptr && !own->sequential();
  if (worker && !sequential()) {
    // It runs its own pool's jobs, and naps until a job of this pool ends.
    waits::finish_nap napper{*this};
    auto nap = [&](std::chrono::microseconds d) { napper.nap(done, d); };
    waits::help_until_called(*own, done, nap);
  } else if (worker && own != this) {
    // Nobody else runs a sequential pool's jobs: run them, and our own
    // pool's jobs in between, since pred may depend on either.
    waits::help_loop<true>(*this, done, own, detail::plain_sleep{});
  } else if (own != this && !sequential()) {
    waits::outside_wait_until(*this, done);
  } else {
    detail::plain_sleep sleep;
    waits::help_until_called(*this, done, sleep);
  }
}

template <class F>
future<detail::call_result_t<std::decay_t<F>&>> pool::submit(F&& f) {
  posting::check_callable<F>();
  // Nothing more to report when f cannot be called.
  if constexpr (std::is_invocable_v<std::decay_t<F>&>) {
    return posting::submit_checked(*this, destination{}, std::forward<F>(f));
  }
  return {};
}

template <class F, class... Args>
requires(sizeof...(Args) > 0 &&
         !std::is_same_v<std::decay_t<F>, priority>) void pool::spawn(F&& f, Args&&... args) {
  posting::check_callable<F, Args...>();
  spawn(detail::bind_call(std::forward<F>(f), std::forward<Args>(args)...));
}

template <class F, class... Args>
requires(sizeof...(Args) > 0 && !std::is_same_v<std::decay_t<F>, priority>)
    future<detail::call_result_t<std::decay_t<F>, std::decay_t<Args>...>> pool::submit(
        F&& f, Args&&... args) {
  posting::check_callable<F, Args...>();
  return submit(detail::bind_call(std::forward<F>(f), std::forward<Args>(args)...));
}

template <class F>
void pool::spawn(priority p, F&& f) {
  posting::check_callable<F>();
  if constexpr (std::is_invocable_v<std::decay_t<F>&>) {
    posting::post_to<posting::detached_call<std::decay_t<F>>>(*this, queue_of(p), this,
                                                              std::forward<F>(f));
  }
}

template <class F>
future<detail::call_result_t<std::decay_t<F>&>> pool::submit(priority p, F&& f) {
  posting::check_callable<F>();
  if constexpr (std::is_invocable_v<std::decay_t<F>&>) {
    return posting::submit_checked(*this, queue_of(p), std::forward<F>(f));
  }
  return {};
}

template <class F>
void pool::spawn_on(std::size_t worker, F&& f) {
  posting::check_callable<F>();
  if constexpr (std::is_invocable_v<std::decay_t<F>&>) {
    posting::post_to<posting::detached_call<std::decay_t<F>>>(*this, mailbox_of(worker), this,
                                                              std::forward<F>(f));
  }
}

template <class F>
future<detail::call_result_t<std::decay_t<F>&>> pool::submit_on(std::size_t worker, F&& f) {
  posting::check_callable<F>();
  if constexpr (std::is_invocable_v<std::decay_t<F>&>) {
    return posting::submit_checked(*this, mailbox_of(worker), std::forward<F>(f));
  }
  return {};
}

}  // namespace weft

// The two doors first, whichever header a program included first: the
// front ends below reach the pool through them.
#include "detail/local_door.hpp"      // IWYU pragma: export
#include "detail/scheduler_door.hpp"  // IWYU pragma: export
// The front ends pool.hpp exports: futures' jobs, batches, continuations and
// future collections, timers.
#include "batch.hpp"              // IWYU pragma: export
#include "continuation.hpp"       // IWYU pragma: export
#include "detail/future_job.hpp"  // IWYU pragma: export
#include "timer.hpp"              // IWYU pragma: export
