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
           !std::is_same_v<std::decay_t<F>, priority>) void spawn(F&& f, Args&&... args) {
    check_callable<F, Args...>();
    spawn(detail::bind_call(std::forward<F>(f), std::forward<Args>(args)...));
  }
  /// submit(f) of f(args...), the arguments bound as spawn(f, args...) binds them.
  template <class F, class... Args>
  requires(sizeof...(Args) > 0 && !std::is_same_v<std::decay_t<F>, priority>)
      [[nodiscard]] future<detail::call_result_t<std::decay_t<F>, std::decay_t<Args>...>> submit(
          F&& f, Args&&... args) {
    check_callable<F, Args...>();
    return submit(detail::bind_call(std::forward<F>(f), std::forward<Args>(args)...));
  }

  /// spawn(f) at priority p: wherever a worker chooses among queued jobs, a
  /// higher priority goes first, with a rule that keeps a steady stream of
  /// higher ones from starving the rest (docs/control.md, "Priorities").
  /// priority::normal is spawn(f). In sequential mode jobs run in
  /// submission order whatever their priority.
  template <class F>
  void spawn(priority p, F&& f) {
    check_callable<F>();
    if constexpr (std::is_invocable_v<std::decay_t<F>&>) {
      post_to<detached_call<std::decay_t<F>>>(queue_of(p), this, std::forward<F>(f));
    }
  }
  /// submit(f) at priority p (see spawn(priority, f)).
  template <class F>
  [[nodiscard]] future<detail::call_result_t<std::decay_t<F>&>> submit(priority p, F&& f) {
    check_callable<F>();
    if constexpr (std::is_invocable_v<std::decay_t<F>&>) {
      return submit_checked(queue_of(p), std::forward<F>(f));
    }
    return {};
  }

  /// Runs f() on worker `worker` (0 <= worker < size()) and on no other
  /// thread: the job waits in that worker's mailbox, which thieves and
  /// helping threads skip, and jobs of one mailbox start in the order they
  /// were sent. For thread-affine work and per-worker state
  /// (docs/control.md, "A job on a chosen worker"). Throws usage_error for
  /// an index out of range (always in sequential mode, which has no workers).
  /// Under a full bound (pool_options::capacity) it is never run by the
  /// sender: with run_here or a callable policy it waits for room.
  template <class F>
  void spawn_on(std::size_t worker, F&& f) {
    check_callable<F>();
    if constexpr (std::is_invocable_v<std::decay_t<F>&>) {
      post_to<detached_call<std::decay_t<F>>>(mailbox_of(worker), this, std::forward<F>(f));
    }
  }
  /// submit(f) on worker `worker` (see spawn_on).
  template <class F>
  [[nodiscard]] future<detail::call_result_t<std::decay_t<F>&>> submit_on(std::size_t worker,
                                                                          F&& f) {
    check_callable<F>();
    if constexpr (std::is_invocable_v<std::decay_t<F>&>) {
      return submit_checked(mailbox_of(worker), std::forward<F>(f));
    }
    return {};
  }

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
  // spawn_all's callables live in one block (weft/batch.hpp), for a range
  // that knows its size and has at least batch_block_min of them; jobs of
  // one layout, each a span of them, run them and split when a worker is
  // idle. Below that, a block's allocation and splits cost more than they
  // save: batches of 10 were 1.22-1.27x slower that way
  // (batches/1000000_by_10/spawn_all), those of 16 to 128 1.4-2.5x faster (a
  // test program, 1,000,000 empty jobs).
  static constexpr std::size_t batch_block_min = 32;
  // How many callables a queued job stands for: a batch piece's span, else 1.
  static std::size_t callables_in(detail::job* j) noexcept;

  // The two doors every front end is to reach the pool through
  // (detail/scheduler.hpp from any thread, detail/local.hpp on a worker).
  friend struct detail::scheduler;
  friend struct detail::local;

  // Where a job is queued: for any worker (its deque, a lane or the
  // injector, as push() chooses), a priority queue, or one worker's mailbox
  // (src/control.cpp).
  struct destination {
    enum kind_t : std::uint8_t { any, high, low, mailbox } kind = any;
    std::size_t worker = 0;  // for mailbox
  };
  static destination queue_of(priority p) noexcept {
    if (p == priority::high) return {destination::high};
    if (p == priority::low) return {destination::low};
    return {};
  }
  // Throws usage_error unless worker < size().
  [[nodiscard]] destination mailbox_of(std::size_t worker) const;

  // submit() at d. Kept: a call whose caller has begun and waits for it (a
  // parallel algorithm's root job when its caller cannot stand in): purge()
  // does not drop it and the bound does not hold it up, as for the pool's
  // own jobs (docs/algorithms.md, "Where it runs").
  template <bool Kept = false, class F>
  future<std::invoke_result_t<std::decay_t<F>&>> submit_checked(destination d, F&& f);

  // One clear message for what spawn and submit cannot run.
  template <class F, class... Args>
  static constexpr void check_callable() {
    if constexpr (sizeof...(Args) == 0) {
      static_assert(std::is_invocable_v<std::decay_t<F>&>,
                    "weft::pool::spawn/submit: f must be callable with no arguments, or "
                    "with the arguments given after it (spawn(f, args...))");
    } else {
      static_assert(std::is_invocable_v<std::decay_t<F>, std::decay_t<Args>...>,
                    "weft::pool::spawn/submit(f, args...): f must be callable with copies of "
                    "args passed as rvalues (use std::ref(x) to pass x by reference)");
    }
  }

  // What a posted callable leaves to do once it has been destroyed.
  struct no_epilogue {
    void operator()() const noexcept {}
  };

  template <class F>
  struct detached_call {
    template <class G>
    detached_call(pool* p, G&& g) : owner(p), fn(std::forward<G>(g)) {}

    pool* owner;
    F fn;
    no_epilogue operator()() noexcept {
      try {
        fn();
      } catch (...) {
        owner->report_error(std::current_exception());
      }
      return {};
    }
    // purge() may drop it, unless F is the inner job of a front end that
    // must see it run (it then says so with weft_keep_on_purge).
    static constexpr bool cancellable = !requires { typename F::weft_keep_on_purge; };
    no_epilogue cancel() noexcept { return {}; }
  };

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

  // Allocates a heap job, stores `C{args...}` in it, counts it and queues it
  // (at d, under the pool's bound).
  template <class C, class... Args>
  void post_to(destination d, Args&&... args);
  template <class C, class... Args>
  void post(Args&&... args) {
    post_to<C>(destination{}, std::forward<Args>(args)...);
  }
  // post() by `self`, the calling thread's worker of this pool, onto its own
  // deque: counted with plain stores (no read-modify-write), and public at
  // once, so that an idle worker may take it whatever the spawner does next
  // (docs/deque.md, "Idle workers"). For a task_group's spawns on the
  // worker that made it.
  template <class C, class... Args>
  void post_own(detail::worker& self, Args&&... args);
  // Queues j, counted by count_own_spawn(), in the public part of self's
  // deque, as post_own() does. Throws only std::bad_alloc, and then j was
  // not queued. The private part is a join's alone: a job there is hidden
  // from thieves until its owner publishes it, which only a join's
  // contract ("f never waits for g") makes safe.
  [[gnu::always_inline]] void push_own(detail::worker& self, detail::job* j) {
    self.deque.push(j);
    sleep_.new_work();
  }
  // Stores C{args...} in j (allocated and counted for it) and makes it
  // runnable; if that throws, j is discarded (freed, counted finished).
  template <class C, class... Args>
  void fill_posted(detail::heap_job* j, Args&&... args);
  // Owner only: the job on top of self's deque, for self to run now; the
  // private items left below it are published first (docs/deque.md, "Idle
  // workers"), so that they wait for no longer than the job that pushed them.
  detail::job* take_own(detail::worker& self) noexcept {
    detail::job* j = self.deque.pop();
    if (j != nullptr && self.deque.publish_all()) sleep_.new_work();
    return j;
  }

  // Queues j, built and counted by ticket t, at d. Without a bound
  // (pool_options::capacity), or for one of our workers, that is all;
  // else dispatch_bounded() applies the overflow policy. Throws only while
  // j is still the caller's (queue_full, std::bad_alloc): once it returns
  // or hands j over, j is the pool's (or the overflow callable's).
  void dispatch(detail::job* j, destination d, const ticket& t) {
    if (!bound_.limited() || t.submission == 0) [[likely]] {
      push_to(j, d);
      return;
    }
    dispatch_bounded(j, d);
  }
  void dispatch_bounded(detail::job* j, destination d);
  void push_to(detail::job* j, destination d) {
    if (d.kind == destination::any) [[likely]] {
      push(j);
      return;
    }
    push_special(j, d);
  }
  // A priority queue or a mailbox (src/control.cpp).
  void push_special(detail::job* j, destination d);
  // Whether the calling thread is running one of our jobs (on a worker, or
  // helping): its submissions are never held up by the bound.
  [[nodiscard]] bool bounded_here() const noexcept { return bound_.limited() && !in_own_job(); }
  [[nodiscard]] bool in_own_job() const noexcept {
    unsigned e = 0;
    return on_own_worker() || detail::running_scope::find(this, e);
  }
  // Called by every job kind that purge may drop, as it starts: gives back
  // the job's slot of bounded submission, and says whether the job was
  // dropped (job_flags::cancel) and must cancel instead of running.
  static bool cancelled_at_start(pool* owner, const detail::job* j) noexcept {
    const std::uint32_t flags = j->flags;
    constexpr std::uint32_t acted_on = detail::job_flags::throttled | detail::job_flags::cancel;
    if ((flags & acted_on) == 0) [[likely]] {
      return false;
    }
    if ((flags & detail::job_flags::throttled) != 0) owner->bound_.release();
    if ((flags & detail::job_flags::cancel) == 0) return false;
    owner->counters_.add_cancelled(1);
    return true;
  }
  // Drops a cancellable job the caller took from a queue (or an overflow
  // callable let go): it runs its cancel path.
  static void cancel_job(detail::job* j) noexcept {
    j->flags |= detail::job_flags::cancel;
    j->run(j);
  }
  template <class C>
  static void run_posted(detail::job* base) noexcept;

  // From the cache count_spawn() returned.
  detail::heap_job* allocate_job(detail::job_cache& from) { return accounting_.allocate_job(from); }
  // A block for a future's state from the cache count_spawn() returned, and
  // the slab it belongs to.
  using state_memory = detail::accounting::state_memory;
  state_memory allocate_state(detail::job_cache& from) { return accounting_.allocate_state(from); }
  // The state S of a future of callable g, counted by t (docs/design.md,
  // "Where jobs live"): in a block of t's cache when it fits, else with
  // new. Throws what allocating or constructing throws, leaving nothing
  // behind (the count is the caller's to undo).
  template <class S, class G>
  S* make_state(const ticket& t, G&& g);

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
  // Idle search and sleep: whether worker w may find a job now (not paused,
  // and some queue it takes from is non-empty). seq_cst loads throughout:
  // the recheck after sleep_controller::prepare() (docs/sleep.md).
  [[nodiscard]] bool work_for(const detail::worker& w) const noexcept;
  // The cheap look of an idle worker's search loop: `full` also looks at
  // the workers' deques.
  [[nodiscard]] bool worth_a_look(const detail::worker& w, bool full) const noexcept {
    if (attention_.wanted()) [[unlikely]]
      return special_worth_a_look(w, full);
    return full ? !all_queues_empty() : !outside_queues_empty();
  }
  [[nodiscard]] bool special_worth_a_look(const detail::worker& w, bool full) const noexcept;
  // What worker w may do besides taking from the plain queues (the question
  // work_for(), special_worth_a_look() and mail_for() share): `leave` the
  // pool (resize()); nothing while `paused`; a job in its mailbox or, with
  // `priorities`, a priority queue (`special_job`); or `none` of these.
  enum class outlook : std::uint8_t { none, leave, paused, special_job };
  [[nodiscard]] outlook outlook_for(const detail::worker& w, bool priorities,
                                    std::memory_order order) const noexcept;
  // The `own` check of a parked worker (sleep_controller::park): whether its
  // mailbox has a job it may start.
  struct mail_check {
    const pool* owner;
    const detail::worker* worker;
  };
  static bool mail_for(const void* ctx) noexcept;
  detail::job* take_from_lanes(detail::worker* self);
  detail::job* steal_from_workers(detail::worker* self);
  // Owner only: moves self.batch into self's deque, for others to steal.
  // far_behind: the batch came from a lane whose producer is far ahead of
  // the workers.
  void keep_batch(detail::worker& self, bool far_behind);
  bool all_queues_empty() const noexcept;
  // The injector and the lanes only: what threads outside the pool push to.
  [[nodiscard]] bool outside_queues_empty() const noexcept;
  // Idle search: whether the only work is in lanes still being filled.
  bool lanes_filling(std::int64_t& last_pushed) const noexcept;
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

// The counts and the waits, which the definitions below use.
#include "detail/core/counting.hpp"  // IWYU pragma: export
#include "detail/core/wait.hpp"      // IWYU pragma: export

namespace weft {

// ---------------------------------------------------------------------------

template <class F>
void pool::spawn(F&& f) {
  check_callable<F>();
  // Nothing more to report when f cannot be called.
  if constexpr (std::is_invocable_v<std::decay_t<F>&>) {
    post<detached_call<std::decay_t<F>>>(this, std::forward<F>(f));
  }
}

template <class C, class... Args>
void pool::post_to(destination d, Args&&... args) {
  const ticket t = counting::count_spawn(*this);
  const counting::submission_guard guard{*this, t};  // destroyed last: the last touch of the pool
  detail::heap_job* j = nullptr;
  try {
    j = allocate_job(*t.cache);
  } catch (...) {
    counting::count_finished(*this, *t.cache, t.epoch, 1);
    throw;
  }
  j->epoch = t.epoch;
  fill_posted<C>(j, std::forward<Args>(args)...);
  try {
    dispatch(j, d, t);
  } catch (...) {
    detail::destroy_callable<C>(j);
    counting::discard(*this, j);
    throw;
  }
}

template <class C, class... Args>
void pool::fill_posted(detail::heap_job* j, Args&&... args) {
  try {
    detail::construct_callable<C>(j, std::forward<Args>(args)...);
  } catch (...) {
    counting::discard(*this, j);
    throw;
  }
  j->run = &run_posted<C>;
  if constexpr (requires(C & c) { c.job_flags(); }) {
    j->flags = detail::callable_of<C>(j)->job_flags();  // a kind that says (a batch's piece)
  } else if constexpr (C::cancellable) {
    j->flags = detail::attention::cancellable_flags();
  }
}

template <class C, class... Args>
void pool::post_own(detail::worker& self, Args&&... args) {
  detail::heap_job* j = self.cache.allocate();  // throws before anything is counted
  j->epoch = counting::count_own_spawn(*this, self);
  fill_posted<C>(j, std::forward<Args>(args)...);
  try {
    push_own(self, j);
  } catch (...) {
    detail::destroy_callable<C>(j);
    counting::discard(*this, j);
    throw;
  }
}

template <class C>
void pool::run_posted(detail::job* base) noexcept {
  auto* j = static_cast<detail::heap_job*>(base);
  C* c = detail::callable_of<C>(j);
  pool* owner = c->owner;
  {
    // A kind that names what it belongs to (a task_group's job) marks the
    // scope with it, so that its front end can recognise it on the stack.
    const void* work = nullptr;
    if constexpr (requires { c->work(); }) work = c->work();
    const detail::running_scope running{owner, j->epoch, work};
    // Only a cancellable kind is ever dropped (purge(), weft::job).
    const bool dropped = cancelled_at_start(owner, j) && C::cancellable;
    auto epilogue = dropped ? c->cancel() : (*c)();
    // The callable and its captures go before anybody waiting for the job
    // is released (the epilogue, or the count below), so their destructors
    // never run after the waiter returned.
    detail::destroy_callable<C>(j);
    epilogue();
  }
  counting::retire(*owner, j);  // last: the pool may be destroyed once the job counts as finished
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

namespace detail {

// Gives back block b of `from`, whose state has been destroyed: to the free
// list of the cache's owner when that is the calling thread (a worker letting
// go of a state from its own cache), else to the slab's stack. Any thread.
inline void release_state_block(state_slab* from, state_block* b) noexcept {
  worker* self = tls.self;
  if (self != nullptr && self->cache.slab() == from) {
    self->cache.release_state_local(b);
    return;
  }
  from->release(b);
}

}  // namespace detail

template <class S, class G>
S* pool::make_state(const ticket& t, G&& g) {
  S* s = nullptr;
  if constexpr (detail::fits_state_block<S>) {
    const state_memory m = allocate_state(*t.cache);
    try {
      s = ::new (static_cast<void*>(m.block->bytes)) S(this, std::forward<G>(g));
    } catch (...) {
      detail::release_state_block(m.slab, m.block);
      throw;
    }
    s->slab = m.slab;
  } else {
    s = new S(this, std::forward<G>(g));
  }
  s->counted = t.cache;
  s->epoch = t.epoch;
  return s;
}

template <class F>
future<detail::call_result_t<std::decay_t<F>&>> pool::submit(F&& f) {
  check_callable<F>();
  // Nothing more to report when f cannot be called.
  if constexpr (std::is_invocable_v<std::decay_t<F>&>) {
    return submit_checked(destination{}, std::forward<F>(f));
  }
  return {};
}

template <bool Kept, class F>
future<std::invoke_result_t<std::decay_t<F>&>> pool::submit_checked(destination d, F&& f) {
  using R = std::invoke_result_t<std::decay_t<F>&>;
  using state = detail::future_job<R, std::decay_t<F>>;
  const ticket t = counting::count_spawn(*this);
  const counting::submission_guard guard{*this, t};  // destroyed last: the last touch of the pool
  state* s = nullptr;
  try {
    s = make_state<state>(t, std::forward<F>(f));
    if constexpr (Kept) {
      s->flags = 0;  // not cancellable, not throttled
      push_to(s, d);
    } else {
      dispatch(s, d, t);
    }
  } catch (...) {
    if (s != nullptr) state::destroy_job(s);
    counting::count_finished(*this, *t.cache, t.epoch, 1);
    throw;
  }
  return future<R>(s);
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
