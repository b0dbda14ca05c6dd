// The pool's waits (docs/waiting.md): how a thread waits for something the
// pool runs. Every wait goes through wait_on(), which decides by who the
// calling thread is: a worker runs its own pool's jobs (help_until), a
// thread on a sequential pool runs that pool's jobs, a stand-in runs the
// pool's jobs as a worker would, and any other thread spins briefly, runs
// its own lane's jobs if the pool lets it, then blocks. Functions over the
// pool's parts, not members of the pool: `p` is the pool waited on.
// Included by weft/pool.hpp right after class pool; the front ends reach
// the waits through the doors (detail/scheduler.hpp, detail/local.hpp).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include "../backoff.hpp"
#include "../context.hpp"
#include "../fault.hpp"
#include "../lane.hpp"
#include "../latch.hpp"

namespace weft {

struct pool::waits {
  // Runs jobs on this thread until done() holds; the one loop under every
  // wait. Nests at most detail::max_help_depth deep, then hands off.
  // `also`: a second pool whose jobs the caller runs too (see wait_until).
  template <class Done>
  static void help_until(pool& p, Done& done) {
    help_loop<false>(p, done, nullptr, detail::plain_sleep{});
  }
  // help_until() for a wait whose end can wake the waiter: once it has
  // nothing to run for a while it calls nap(d), which must return within d
  // and should return as soon as done() may hold (a join's stolen half
  // unparks its joiner), instead of sleeping d out.
  template <class Done, class Nap>
  static void help_until(pool& p, Done& done, Nap& nap) {
    help_loop<false>(p, done, nullptr, nap);
  }
  // help_until(), called and not inlined from wait_until(): with the help
  // loops inlined into it, a user's function that calls wait_until (fib's
  // spawn_wait_until) grew by half and ran 1-3% slower.
  template <class Done, class Nap>
  [[gnu::noinline]] static void help_until_called(pool& p, Done& done, Nap& nap) {
    help_loop<false>(p, done, nullptr, nap);
  }
  // The wait of a thread standing in for a worker (stand_in_scope): as a
  // worker's join, it runs the pool's jobs, yields while there are none for
  // as long as an idle worker would search (the halves of a parallel loop
  // end within microseconds of each other, and a parked thread costs a
  // futex wake-up on the loop's critical path), then naps until done() can
  // hold. Not inlined: outside waits other than this one stay as they were.
  template <class Done, class Nap>
  [[gnu::noinline]] static void help_standing_in(pool& p, Done& done, Nap& nap) {
    const auto began = std::chrono::steady_clock::now();
    auto yield_then_nap = [&nap, began](std::chrono::microseconds d) {
      if (std::chrono::steady_clock::now() - began < detail::idle_spin_time) {
        std::this_thread::yield();
      } else {
        nap(d);
      }
    };
    help_loop<false>(p, done, nullptr, yield_then_nap);
  }
  // A worker's wait for jobs it pushed itself (a task_group on the worker
  // that made it): runs what is on top of its own deque until done() holds,
  // without the search of help_until(); false when it stopped first (the
  // deque ran dry, the help depth is reached, or the pool is paused or has
  // priority jobs), and the caller then waits the general way. A job for
  // which mine(j) holds is the caller's own (a task_group's slot): it runs
  // as a call of the waiting frame, like join's second half, and does not
  // count towards the help depth. Inlined: it is task_group::wait()'s
  // whole fast path (bench fib/N/task_group_run_and_wait).
  template <class Done, class Mine>
  [[gnu::always_inline]] static bool help_from_own_deque(pool& p, detail::worker& self, Done& done,
                                                         Mine& mine);
  // Whether a worker's wait may run jobs from its own deque now (see
  // help_from_own_deque()).
  [[nodiscard]] static bool may_help_from_own_deque(const pool& p) noexcept {
    return detail::tls.depth < detail::max_help_depth && !p.attention_.wanted();
  }
  // Runs j, which worker self took from its own deque in a wait, as
  // help_from_own_deque() runs a job that is not the caller's own.
  static void run_taken(pool& p, detail::worker& self, detail::job* j) noexcept {
    detail::context& ctx = detail::tls;
    ++ctx.depth;
    p.execute(j);
    --ctx.depth;
    counting::flush_now_and_then(p, self);
  }
  // Leaves a help loop however it ends: one level of help depth, and the
  // visit of a thread that is not our worker (`visit`, or nullptr).
  struct help_exit {
    detail::context& ctx;
    detail::guests* visit;
    help_exit(detail::context& c, detail::guests* v) noexcept : ctx(c), visit(v) {}
    help_exit(const help_exit&) = delete;
    help_exit& operator=(const help_exit&) = delete;
    ~help_exit() {
      --ctx.depth;
      if (visit != nullptr) visit->leave();  // the last touch of the pool
    }
  };
  // The loop of help_until; with Both, it also runs `also`'s jobs.
  template <bool Both, class Done, class Nap>
  static void help_loop(pool& p, Done& done, pool* also, Nap&& nap);
  // Runs body() on a fresh thread that takes over the calling thread's role
  // (docs/waiting.md); false if no thread could be started.
  template <class Body>
  static bool hand_off(pool& p, Body&& body);

  // Waits until done() holds the way the calling thread should
  // (docs/waiting.md): running this pool's jobs if it is sequential, running
  // its own pool's jobs if it is a worker, else calling block(). A thread
  // that runs jobs naps with nap(d) when it has none (see help_until()).
  template <class Done, class Block, class Nap = detail::plain_sleep>
  static void wait_on(pool& p, Done& done, Block&& block, Nap&& nap = {});
  // The first part of a wait by a thread that is not a worker, before it
  // parks (docs/waiting.md, "Outside waits"); true as soon as done() holds.
  // `mine`: the caller's lane, whose jobs it may run meanwhile, or nullptr.
  template <class Done>
  static bool wait_briefly(pool& p, Done& done, detail::lane* mine);
  // A hint: whether the calling thread's lane into this pool holds jobs no
  // worker has taken yet. Relaxed loads (lane_queue::waiting()).
  [[nodiscard]] static bool own_jobs_queued(const pool& p) noexcept {
    const detail::lane_cache_entry& cached = detail::tls_lane;
    return cached.pool_id == p.id_ && cached.bound != nullptr && cached.bound->queue.waiting() > 0;
  }
  // Runs one job of the caller's own lane; false when there was none, or
  // when another thread holds the helper slot.
  static bool help_from_lane(pool& p, detail::lane& mine) noexcept;
  // wait_until() on a thread that is not a worker of this pool, which is not
  // sequential: runs jobs as the helper, else sleeps until jobs finish.
  template <class Done>
  static void outside_wait_until(pool& p, Done& done);
  // Runs jobs (find_work) as the pool's helper until done() or none is
  // left; false if it ran none (or the slot was taken). The caller has
  // just seen done() false.
  template <class Done>
  static bool help_as_helper(pool& p, Done& done);
  // wait_until()'s nap on a worker (of this pool or another) with nothing
  // to run: sleeps until a job of this pool finishes or d has passed. It
  // registers as a finish waiter at its first nap, until the wait ends
  // (docs/waiting.md, "wait_until on a worker").
  class finish_nap {
   public:
    explicit finish_nap(pool& p) noexcept : p_(p) {}
    finish_nap(const finish_nap&) = delete;
    finish_nap& operator=(const finish_nap&) = delete;
    ~finish_nap() {
      if (!registered_) return;
      p_.finish_signal_.leave();
      p_.idle_.unwant_flush();
    }
    template <class Done>
    void nap(Done& done, std::chrono::microseconds d);

   private:
    pool& p_;
    bool registered_ = false;
  };

  // Holds the helper slot for its lifetime, if it could take it (or the
  // calling thread already holds it): jobs run meanwhile see
  // this_worker::index() == max_size().
  class helper_scope {
   public:
    explicit helper_scope(pool& p) noexcept : ctx_(detail::tls), saved_(ctx_) {
      if (ctx_.helping == &p) {
        held_ = true;  // an outer frame holds it
        return;
      }
      if (!p.guests_.take_helper_slot()) return;
      pool_ = &p;
      held_ = true;
      ctx_.helping = &p;
      ctx_.helper_index = p.max_size();
    }
    ~helper_scope() {
      if (pool_ == nullptr) return;
      ctx_.helping = saved_.helping;
      ctx_.helper_index = saved_.helper_index;
      pool_->guests_.free_helper_slot();
    }
    helper_scope(const helper_scope&) = delete;
    helper_scope& operator=(const helper_scope&) = delete;
    [[nodiscard]] bool held() const noexcept { return held_; }

   private:
    detail::context& ctx_;
    const detail::context saved_;
    pool* pool_ = nullptr;  // set when this scope took the slot
    bool held_ = false;
  };
  // An outside thread that runs work of this pool as if it were one of its
  // workers, for its lifetime, if it could (held()): a parallel algorithm's
  // caller runs the loop itself instead of waiting for a worker to, as
  // oneTBB's and OpenMP's callers do (docs/algorithms.md, "Where it runs").
  // It holds the helper slot (its code sees this_worker::index() ==
  // max_size(), and its forks become jobs of this pool), counts as one job
  // (so wait() and the destructor wait for it), and is the sleep
  // controller's guest: one worker fewer searches or is woken meanwhile, so
  // the threads that run the pool's work stay as many as its workers. Its
  // waits run the pool's jobs as a worker's do. Not held on a sequential or
  // paused pool, one of fewer than two workers, on a thread that works for
  // or helps any pool or runs a worker hook, or when another thread holds
  // the helper slot.
  class stand_in_scope {
   public:
    explicit stand_in_scope(pool& p);
    ~stand_in_scope();
    stand_in_scope(const stand_in_scope&) = delete;
    stand_in_scope& operator=(const stand_in_scope&) = delete;
    [[nodiscard]] bool held() const noexcept { return held_; }

   private:
    pool& p_;
    std::optional<helper_scope> helper_;
    ticket ticket_{};
    // The loop is one of the pool's jobs while it runs here: what it
    // spawns or forks counts in its epoch, and is neither refused once the
    // destructor has begun nor held up by the bound (count_against(),
    // dispatch_bounded()), as a worker's would be.
    std::optional<detail::running_scope> running_;
    bool held_ = false;
  };
  static void await(pool& p, const detail::latch& l);
  // The part of await() and await_until() that decides how to wait and
  // publishes the visit of a thread that is not our worker. A thread that
  // runs jobs meanwhile naps on the latch, until `deadline` at the latest.
  template <class Done, class Block>
  static void wait_on_latch(pool& p, const detail::latch& l, Done& done, Block&& block,
                            std::chrono::steady_clock::time_point deadline);
  // await() with a deadline; true if the latch was set.
  static bool await_until(pool& p, const detail::latch& l,
                          std::chrono::steady_clock::time_point deadline);
  // A worker of another pool waiting here (wait(), wait_for(), the
  // destructor) with nothing of its own to run: naps on its parker for at
  // most d, and no later than `deadline`, where idle_waiters::notify()
  // wakes it; any other thread sleeps d out. done() as for
  // idle_waiters::block_until().
  template <class Done>
  static void nap_until_idle(pool& p, Done& done, std::chrono::microseconds d,
                             std::optional<std::chrono::steady_clock::time_point> deadline);
};

template <class Done>
void pool::waits::finish_nap::nap(Done& done, std::chrono::microseconds d) {
  detail::fault::before_nap();
  if (!registered_) {
    // A hint, as in outside_wait_until(): a worker that looked for waiters
    // just before this does not signal its job, so the first nap is short;
    // jobs that finish after it are signalled.
    p_.idle_.want_flush();
    p_.finish_signal_.enlist();
    registered_ = true;
    d = std::min(d, detail::finish_registration_grace);
  }
  // Read before the check (finish_signal::epoch()).
  const std::uint64_t seen = p_.finish_signal_.epoch();
  if (done()) return;
  p_.finish_signal_.park_until(seen, d);
}

template <class Done>
void pool::waits::outside_wait_until(pool& p, Done& done) {
  if (done()) return;
  // A worker that never runs out of work still signals us after its jobs
  // (flush_now_and_then() looks at flush_requested() only).
  p.idle_.want_flush();
  p.finish_signal_.enlist();
  struct registration {
    pool& owner;
    explicit registration(pool& o) noexcept : owner(o) {}
    registration(const registration&) = delete;
    registration& operator=(const registration&) = delete;
    ~registration() {
      owner.finish_signal_.leave();
      owner.idle_.unwant_flush();
    }
  } const registered{p};
  // The fallback for a finish we missed as we registered, or a predicate
  // that depends on something else: 1 ms after a finish, doubling to 64 ms
  // while nothing finishes.
  constexpr std::chrono::milliseconds first_timeout{1};
  constexpr std::chrono::milliseconds longest_timeout{64};
  std::chrono::milliseconds timeout = first_timeout;
  for (;;) {
    // Read before the check (finish_signal::epoch()).
    const std::uint64_t seen = p.finish_signal_.epoch();
    if (done()) return;
    if (help_as_helper(p, done)) {
      timeout = first_timeout;
      continue;
    }
    if (p.finish_signal_.park_until(seen, timeout)) {
      timeout = first_timeout;
    } else {
      timeout = std::min(timeout * 2, longest_timeout);
    }
  }
}

template <class Done>
bool pool::waits::help_as_helper(pool& p, Done& done) {
  detail::context& ctx = detail::tls;
  // Past the help-depth limit a thread that is not a worker only sleeps:
  // the workers go on.
  if (ctx.depth >= detail::max_help_depth) return false;
  const helper_scope helper{p};
  if (!helper.held()) return false;
  // Counted as a visitor while it runs jobs, as in help_loop().
  p.guests_.enter();
  ++ctx.depth;
  const help_exit guard{ctx, &p.guests_};
  // The caller has just checked done().
  bool ran = false;
  while (detail::job* j = p.find_work(nullptr)) {
    p.execute(j);
    ran = true;
    if (done()) break;
  }
  return ran;
}

template <bool Both, class Done, class Nap>
void pool::waits::help_loop(pool& p, Done& done, pool* also, Nap&& nap) {
  if (done()) return;
  detail::context& ctx = detail::tls;
  if (ctx.depth >= detail::max_help_depth &&
      hand_off(p, [&p, &done, also, &nap] { help_loop<Both>(p, done, also, nap); })) {
    return;
  }
  ++ctx.depth;
  detail::worker* self = ctx.owner == &p ? ctx.self : nullptr;
  // `also` is the pool the calling worker belongs to (wait_until on a
  // sequential pool from a worker of another pool).
  detail::worker* also_self = Both ? ctx.self : nullptr;
  // A thread that is not one of our workers counts itself as a visitor, so
  // that the destructor does not free the pool while it still runs a job.
  const bool visiting = self == nullptr;
  if (visiting) p.guests_.enter();
  const help_exit guard{ctx, visiting ? &p.guests_ : nullptr};
  detail::backoff backoff;
  while (!done()) {
    if (detail::job* j = p.find_work(self)) {
      p.execute(j);
      if (self != nullptr) counting::flush_now_and_then(p, *self);
      backoff.reset();
      continue;
    }
    if constexpr (Both) {
      if (detail::job* k = also->find_work(also_self)) {
        also->execute(k);
        backoff.reset();
        continue;
      }
    }
    // A wait() on this pool needs our counts even while we wait here.
    if (self != nullptr && counting::flush_requested(p) && counting::hand_over_counts(*self)) {
      p.idle_.wake();
    }
    backoff.pause(nap);
  }
}

template <class Done, class Mine>
[[gnu::always_inline]] inline bool pool::waits::help_from_own_deque(pool& p, detail::worker& self,
                                                                    Done& done, Mine& mine) {
  // A pause or a priority job sends us to the general loop, which looks at
  // them. Checked before each job that is not the caller's own: its own run
  // as calls of this frame, as join's second half does, without the check.
  if (!may_help_from_own_deque(p)) return false;
  while (!done()) {
    detail::job* j = p.take_own(self);
    if (j == nullptr) return false;
    detail::worker::bump(self.counts.jobs);
    if (mine(j) && !p.traced()) [[likely]] {
      // A worker's pool is never sequential: execute() would only add the
      // call and that test.
      j->run(j);
      counting::flush_now_and_then(p, self);  // outside waiters in wait_until() look again
    } else {
      run_taken(p, self, j);
      if (!may_help_from_own_deque(p)) return false;
    }
  }
  return true;
}

template <class Done, class Block, class Nap>
void pool::waits::wait_on(pool& p, Done& done, Block&& block, Nap&& nap) {
  pool* own = detail::tls.owner;
  if (p.sequential()) {
    help_until(p, done, nap);
  } else if (own != nullptr && !own->sequential()) {
    help_until(*own, done, nap);
  } else if (detail::tls.standing_in == &p) [[unlikely]] {
    help_standing_in(p, done, nap);
  } else {
    // Only the lane this thread already has: binding one allocates, and a
    // thread that never submitted here has no jobs of its own to run.
    const detail::lane_cache_entry& cached = detail::tls_lane;
    detail::lane* mine = p.waiters_help_ && cached.pool_id == p.id_ ? cached.bound : nullptr;
    if (!wait_briefly(p, done, mine)) block();
  }
}

template <class Done>
bool pool::waits::wait_briefly(pool& p, Done& done, detail::lane* mine) {
  using clock = std::chrono::steady_clock;
  // 1. Spin: a worker that is awake takes a job within a fraction of a
  // microsecond and often finishes it within this time. Skipped while a
  // worker is being woken: it may have been placed on this very CPU
  // (Linux puts a wakee near its waker), and spinning would hold it off.
  if (!p.sleep_.waking()) {
    const auto until = clock::now() + detail::pure_spin_time;
    do {
      if (done()) return true;
      for (int i = 0; i < detail::relax_per_poll; ++i) detail::cpu_relax();
    } while (clock::now() < until);
    // A job of ours that no worker took while we spun, with none being
    // woken: no worker that searches is running. The one that is may share
    // this very CPU, and Linux does not move either of two threads that
    // never sleep, so yielding would keep both here (a round trip then
    // took 4.5 us instead of 0.4, for the whole run: docs/waiting.md,
    // "Outside waits"). Blocking lets it run, and the wake-up that ends
    // the wait puts us on an idle CPU.
    if (mine == nullptr && own_jobs_queued(p)) return done();
  }
  // 2. Run our own jobs that no worker has taken (pool_options::waiters_help).
  if (mine != nullptr && detail::tls.depth < detail::max_help_depth) {
    while (!done()) {
      if (!help_from_lane(p, *mine)) break;
    }
  }
  // 3. Poll, yielding the CPU between polls, so that a worker woken onto
  // this CPU runs at once; then the caller parks.
  const auto until = clock::now() + detail::block_spin_time;
  do {
    if (done()) return true;
    std::this_thread::yield();
  } while (clock::now() < until);
  return done();
}

template <class Body>
bool pool::waits::hand_off(pool& p, Body&& body) {
  const detail::context saved = detail::tls;
  std::exception_ptr error;
  std::thread helper;
  try {
    if (detail::fault::thread_start_fails())
      throw std::system_error(EAGAIN, std::generic_category());
    helper = std::thread([&] {
      detail::tls = saved;
      detail::tls.depth = 0;
      try {
        body();
      } catch (...) {
        error = std::current_exception();
      }
    });
  } catch (...) {
    // No thread to hand over to (std::system_error, or std::bad_alloc for
    // its state): the caller keeps helping on its own stack, past the
    // limit, rather than give up a wait (docs/waiting.md).
    p.counters_.add_handoff_failure();
    return false;
  }
  helper.join();
  p.counters_.add_handoff();
  if (error) std::rethrow_exception(error);
  return true;
}

}  // namespace weft
