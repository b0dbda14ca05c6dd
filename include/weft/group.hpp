// weft::task_group: structured parallelism with cancellation.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <new>
#include <type_traits>
#include <utility>

#include "detail/latch.hpp"
#include "detail/local.hpp"
#include "detail/scheduler.hpp"
#include "pool.hpp"

namespace weft {

/// What task_group::wait() and run_and_wait() return when no job threw:
/// `complete`, or `cancelled` when cancel() was called since the group was
/// last waited for, so that jobs which had not started by then were skipped
/// (none may have been). As oneTBB's task_group_status, and unlike a graph
/// run or a flow, a cancelled group is no error: docs/waiting.md,
/// "Cancelled work, front end by front end".
enum class group_status : unsigned char { complete, cancelled };

/// Jobs spawned into a group run on its pool; wait() returns when all of them
/// have finished. The first exception cancels the group: jobs that have not
/// started yet are skipped, and wait() rethrows that exception. After wait()
/// the group is fresh again (not cancelled, no error) and can be reused.
/// Groups nest: a job may create its own group and wait for it, on any pool.
/// The destructor waits; an exception nobody collected with wait() then goes
/// to the pool's error path (pool_options::on_error or pool::wait()).
///
/// On a worker of its pool a group allocates nothing per spawn once warm,
/// at any fan-out, for callables of up to 40 bytes (bigger ones are boxed).
/// To fork n children and wait for all of them, with no cancellation and
/// no child waiting for another, weft::join_each(n, f) is several times
/// cheaper: it is weft::join underneath (docs/design.md, "A task_group on
/// its home worker").
class task_group {
 public:
  /// An empty group whose jobs run on p.
  explicit task_group(pool& p) noexcept : pool_(p), home_(home_worker(p)) {}
  task_group(const task_group&) = delete;
  task_group& operator=(const task_group&) = delete;
  ~task_group() {
    // A group is usually idle here (its owner called wait()): that check is
    // inline, and the rest a call.
    if (!idle() || cancelled_.load(std::memory_order_relaxed)) finish_before_destruction();
  }

  /// Runs f() on the group's pool as a job of this group; skipped if the
  /// group is cancelled before it starts. Throws as pool::spawn does.
  ///
  /// An idle worker may take the job from the moment spawn() returns,
  /// whatever the spawner does next: spin on a flag, block on something
  /// outside weft, or compute for long (docs/deque.md, "Idle workers").
  template <class F>
  void spawn(F&& f) {
    if (home_ != nullptr && detail::tls.self == home_) [[likely]] {
      spawn_at_home(std::forward<F>(f));
      return;
    }
    // Relaxed: the count only has to be exact; what the job needs is
    // published by the queue push inside post().
    state_.fetch_add(one_job, std::memory_order_relaxed);
    try {
      detail::scheduler::post<member_call<std::decay_t<F>, false>>(pool_, this, std::forward<F>(f));
    } catch (...) {
      finish_shared();
      throw;
    }
  }

  /// Waits for every job spawned so far; on a worker it runs other jobs
  /// meanwhile. Rethrows the first exception a job threw (job_cancelled if
  /// pool::purge() dropped one); else returns group_status::cancelled if
  /// cancel() was called since the last wait, group_status::complete if
  /// not. Several threads may wait at once: each returns once the group is
  /// idle, and the exception (or `cancelled`) goes to one of them. Throws
  /// weft::usage_error when called from one of the group's own jobs, which
  /// it would wait for.
  group_status wait() {
    wait_until_idle();
    // Not cancelled means no error to take (see finish_before_destruction()).
    if (cancelled_.load(std::memory_order_relaxed)) return take_error();
    return group_status::complete;
  }

  /// Runs f() on the calling thread as a job of this group, then wait()s:
  /// the fork-join form of a group (spawn all pieces but one, run that one
  /// here), which on a worker costs about half of spawning it too (bench
  /// fib/N/task_group_run_and_wait). f() is skipped if the group is
  /// cancelled; its exception cancels the group and is rethrown as a job's
  /// would be. In sequential mode f() runs before the jobs spawned so far.
  template <class F>
  group_status run_and_wait(F&& f) {
    static_assert(std::is_invocable_v<F>, "run_and_wait(f): f must be callable with no arguments");
    run_guarded(std::forward<F>(f));
    return wait();
  }

  /// Jobs of this group that have not started will not run. Running ones
  /// finish (they can poll is_cancelled()).
  void cancel() noexcept { cancelled_.store(true, std::memory_order_relaxed); }
  /// True after cancel() or a job's exception, until wait() returns.
  [[nodiscard]] bool is_cancelled() const noexcept {
    return cancelled_.load(std::memory_order_relaxed);
  }

  /// The pool the group's jobs run on.
  [[nodiscard]] pool& owner() const noexcept { return pool_; }

 private:
  // The worker of p the calling thread is, if any: the group's home.
  static detail::worker* home_worker(const pool& p) noexcept {
    return detail::tls.owner == &p ? detail::tls.self : nullptr;
  }

  // Runs after the job's callable was destroyed: counts the job off its
  // group, the group's last touch.
  struct finish_epilogue {
    task_group* group;
    bool at_home;  // spawned by the home worker (counted in home_spawned_)
    void operator()() const noexcept {
      if (at_home && detail::tls.self == group->home_) {
        group->finish_at_home();
      } else {
        group->finish_shared();
      }
    }
  };

  // AtHome: spawned by the home worker (counted in home_spawned_).
  template <class F, bool AtHome>
  struct member_call {
    task_group* group;
    F fn;
    pool* owner;

    member_call(task_group* g, F&& f) : group(g), fn(std::move(f)), owner(&g->pool_) {}
    member_call(task_group* g, const F& f) : group(g), fn(f), owner(&g->pool_) {}

    // pool::purge() may drop it: the group then fails with job_cancelled.
    static constexpr bool cancellable = true;
    finish_epilogue cancel() noexcept {
      group->fail(detail::cancelled_error());
      return {group, AtHome};
    }

    finish_epilogue operator()() noexcept {
      group->run_guarded(fn);
      return {group, AtHome};
    }
    // What the job belongs to (detail::running_scope): wait_idle() refuses
    // a wait from one of the group's own jobs.
    [[nodiscard]] const void* work() const noexcept { return group; }
  };

  // A job of the home whose callable fits in 40 bytes, run by whoever takes
  // it as run_slot<C>, and by the home's wait() as a call. The first
  // slot_count spawns the home makes between two of its wait()s keep it in
  // the group itself (slots_); the rest in a heap job of the home's job
  // cache, which it covers exactly (a cache line), so that no spawn of any
  // fan-out allocates once the cache is warm. It goes through the queues as
  // any job; whoever runs it counts it finished in the group last
  // (finish_slot(), finish_cached()). The group outlives its jobs, so its
  // own slots are free again once the group is idle; a cached one goes back
  // to the home's cache before its finish is counted (docs/design.md, "A
  // task_group on its home worker").
  // A slot's flags when it is made: pool::purge() may drop it; unstamped:
  // see job_flags::unstamped. Whoever drops it adds job_flags::cancel.
  static constexpr std::uint32_t made_flags =
      detail::job_flags::cancellable | detail::job_flags::unstamped;
  struct slot : detail::job {
    static constexpr std::size_t storage_size = 40;
    slot(task_group* g, unsigned e, run_fn r) noexcept : epoch(e), group(g) {
      run = r;
      flags = made_flags;
    }
    unsigned epoch;  // its epoch parity (pool::counting::count_own_spawn), in job's padding
    task_group* group;
    alignas(void*) std::byte storage[storage_size];
  };
  // A slot made in a heap job's memory replaces it field for field (the
  // heap job's `home` is where the slot keeps its group). Equal sizes force
  // equal offsets: both put their 4-byte epoch in job's tail padding, and
  // a pointer and 40 bytes fill the rest of the line, so a callable built
  // in either one's storage is where the other expects it.
  static_assert(sizeof(slot) == sizeof(detail::heap_job) &&
                alignof(slot) <= alignof(detail::heap_job) &&
                slot::storage_size == detail::heap_job::storage_size);
  static constexpr std::size_t slot_count = 2;
  template <class C>
  static constexpr bool fits_slot_v() noexcept {
    constexpr bool small = sizeof(C) <= slot::storage_size;
    constexpr bool aligned = alignof(C) <= alignof(void*);
    return small && aligned;
  }
  // Raw memory for a slot: constructed at the spawn that takes it.
  union slot_space {
    slot s;
    slot_space() noexcept {}  // NOLINT(modernize-use-equals-default): leaves s unconstructed
  };

  // Runs slot base, whose callable is a C, in the group (Cached false) or in
  // a heap job of the home's cache; the last touch of the slot is
  // finish_slot() or finish_cached(). Two functions, not a test of the
  // address: the test cost fib's slots 5 instructions a run (callgrind).
  template <class C, bool Cached>
  static void run_slot(detail::job* base) noexcept {
    auto* s = static_cast<slot*>(base);
    task_group* const g = s->group;
    const unsigned epoch = s->epoch;
    {
      // Jobs it spawns count in its epoch, as a heap job's do (run_posted);
      // the group marks it as one of its own (see wait_idle()).
      const detail::running_scope running{&g->pool_, epoch, g};
      C* fn = std::launder(reinterpret_cast<C*>(s->storage));
      if (s->flags != made_flags && dropped(s)) [[unlikely]] {
        // pool::purge() dropped it (dropped() failed the group).
      } else {
        g->run_guarded(*fn);
      }
      // Before the finish, as for any job: no destructor runs after the
      // waiter returned.
      fn->~C();
    }
    if constexpr (Cached) {
      g->finish_cached(s, epoch);
    } else {
      g->finish_slot(epoch);
    }
  }
  // A slot whose flags are no longer those it was made with, at its start:
  // whether pool::purge() dropped it, and then the group fails with
  // job_cancelled. Out of line, so that run_slot() keeps nothing for it in
  // registers across the callable (saved and restored in every run).
  [[gnu::noinline]] static bool dropped(slot* s) noexcept {
    task_group* const g = s->group;
    if (!detail::scheduler::cancelled_at_start(g->pool_, s)) return false;
    g->fail(detail::cancelled_error());
    return true;
  }
  // A slot has run: counted finished in the pool and then in the group.
  void finish_slot(unsigned epoch) noexcept {
    detail::worker* self = detail::tls.self;
    if (self == home_) {
      ++self->finished[epoch];
      finish_at_home();
    } else {
      detail::scheduler::count_job_finished(pool_, home_->cache, epoch);
      finish_shared();
    }
  }
  // A slot in a heap job of the home's cache has run (its callable is
  // destroyed): the memory goes back to that cache and the job is counted
  // finished in the pool, as pool::counting::retire() does for any heap job, and then
  // in the group, whose last touch this is.
  void finish_cached(slot* s, unsigned epoch) noexcept {
    // The heap job again, as the cache lent it: the slot kept its group
    // where the job keeps its cache, which is the home's.
    detail::job_cache* const cache = &home_->cache;
    auto* j = std::launder(::new (static_cast<void*>(s)) detail::heap_job);
    j->home = cache;  // a free job keeps it too
    detail::worker* const self = detail::tls.self;
    if (self == home_) [[likely]] {
      // What pool::counting::retire() does for a heap job its own cache's worker
      // runs, without its tests: back on the home's free list, counted
      // finished in the home's deferred count (plain stores).
      cache->release_local(j);
      ++self->finished[epoch];
      finish_at_home();
      return;
    }
    j->epoch = epoch;
    detail::local::retire(pool_, j);
    finish_shared();
  }
  // Whether j is one of this group's slots, in the group or in the home's
  // cache: those the home's wait() runs as calls. Every job flagged
  // `unstamped` is a slot of some group (job_flags::unstamped), so reading
  // its group is sound; j was taken from the home's own deque, so its flags
  // are the home's to read (no thief writes them).
  // The group's own two slots are flagged too, so one test covers both
  // kinds (the address test for the own slots first cost 5 instructions a
  // take, callgrind).
  [[nodiscard]] bool mine(const detail::job* j) const noexcept {
    return (j->flags & detail::job_flags::unstamped) != 0 &&
           static_cast<const slot*>(j)->group == this;
  }

  // wait() on the home, inlined: takes the group's jobs back from the top
  // of its deque and runs its slots as calls (pool::waits::help_from_own_deque());
  // true once the group is idle, false when the general wait (wait_idle())
  // must go on.
  bool wait_at_home() {
    auto done = [this] { return idle_with_home(); };
    auto mine = [this](const detail::job* j) { return this->mine(j); };
    if (!detail::local::help_from_own_deque(pool_, *home_, done, mine)) return false;
    slots_used_ = 0;  // every slot's job has finished
    return true;
  }

  // spawn() on the home worker: counted with plain stores in home_spawned_,
  // kept in a slot (the group's if one is free, else one in the home's job
  // cache) when it fits, queued in the public part of its deque.
  template <class F>
  void spawn_at_home(F&& f) {
    using C = std::decay_t<F>;
    if constexpr (fits_slot_v<C>()) {
      if (slots_used_ < slot_count) [[likely]] {
        slot* s = &slots_[slots_used_].s;
        ::new (static_cast<void*>(s->storage)) C(std::forward<F>(f));  // may throw: nothing changed
        ++slots_used_;
        try {
          queue_slot<C, false>(s);
        } catch (...) {
          --slots_used_;
          throw;
        }
        return;
      }
      // A slot in a heap job of the home's cache. Inline: out of line it
      // cost skynet's node 8 instructions a spawn, and fib 0.6 less a call
      // (callgrind). Throws std::bad_alloc before anything changed.
      auto* s = reinterpret_cast<slot*>(home_->cache.allocate());
      try {
        ::new (static_cast<void*>(s->storage)) C(std::forward<F>(f));
        queue_slot<C, true>(s);
      } catch (...) {
        give_back(s);
        throw;
      }
      return;
    }
    count_home_spawn(1);
    try {
      detail::local::post_own<member_call<C, true>>(pool_, *home_, this, std::forward<F>(f));
    } catch (...) {
      finish_at_home();
      throw;
    }
  }

  // Memory s, its callable C constructed in its storage, becomes a slot of
  // this group, counted and queued; if the push throws, the count is taken
  // back and the callable destroyed, and the memory is the caller's again.
  template <class C, bool Cached>
  void queue_slot(slot* s) {
    const unsigned e = detail::local::count_own_spawn(pool_, *home_);
    ::new (static_cast<void*>(s)) slot(this, e, &run_slot<C, Cached>);
    count_home_spawn(1);
    try {
      detail::local::push_public(pool_, *home_, s);
    } catch (...) {
      count_home_spawn(-1);
      detail::local::uncount_own_spawn(*home_, e);
      std::launder(reinterpret_cast<C*>(s->storage))->~C();
      throw;
    }
  }
  // A heap job of the home's cache that never became a job: back to the
  // cache, counted nowhere.
  void give_back(slot* s) noexcept {
    auto* j = std::launder(::new (static_cast<void*>(s)) detail::heap_job);
    j->home = &home_->cache;
    home_->cache.release_local(j);
  }

  // Runs fn() as a job of the group: skipped once the group is cancelled;
  // its exception cancels the group (fail()).
  template <class F>
  void run_guarded(F&& fn) noexcept {
    if (is_cancelled()) return;
    try {
      std::invoke(std::forward<F>(fn));
    } catch (...) {
      fail(std::current_exception());
    }
  }
  void fail(std::exception_ptr error) noexcept;
  // A job of the group has finished: one counted in state_ (spawned by a
  // thread other than the home, or run by one), or one the home spawned
  // and ran itself.
  void finish_shared() noexcept;
  // finish_shared() for the last job while threads are blocked in wait_idle().
  void finish_last_with_waiters() noexcept;
  // Counts one job off state_, whose value the caller read into s; s is
  // then the value it replaced. With the lock not held (`locked` false) it
  // changes nothing and returns false where it would be the last job while
  // threads are blocked: those finish under mutex_.
  bool count_off(std::uint64_t& s, bool locked, detail::parker*& napper) noexcept;
  // The home has spawned delta more jobs (-1 undoes a spawn that threw).
  void count_home_spawn(int delta) noexcept {
    // Relaxed, and only the home writes it: see idle().
    home_spawned_.store(
        home_spawned_.load(std::memory_order_relaxed) + static_cast<std::uint64_t>(delta),
        std::memory_order_relaxed);
  }
  void finish_at_home() noexcept {
    // Release pairs with the acquire load in idle(): see there. Only the
    // home writes it.
    home_finished_.store(home_finished_.load(std::memory_order_relaxed) + 1,
                         std::memory_order_release);
  }
  [[nodiscard]] bool idle() const noexcept {
    if (home_ == nullptr) {
      // Acquire pairs with the acq_rel decrement in finish_shared(): the
      // jobs' writes are visible to whoever saw the count reach zero.
      return (state_.load(std::memory_order_acquire) & count_mask) == 0;
    }
    return idle_with_home();
  }
  // idle() for a group with a home, as the home's wait() tests it before
  // each take (without the test of home_ that idle() makes first).
  [[nodiscard]] bool idle_with_home() const noexcept {
    // With a home, no one counter is the number of jobs left: that is
    // home_spawned_ - home_finished_ + state_'s count, where a job the home
    // spawned and another thread ran is subtracted from state_. The three
    // are read in this order, each acquire, so that every finish counted in
    // what we read has its spawn counted too: the home's spawns precede its
    // own finishes (program order, then the release store of
    // home_finished_) and a thief's finish (the deque publishes the job,
    // then state_'s release RMW); a nested spawn precedes the finish of the
    // job that made it. What we compute is therefore at least the number of
    // jobs unfinished when we read state_, and zero means there were none
    // (docs/design.md, "A task_group on its home worker").
    const std::uint64_t finished = home_finished_.load(std::memory_order_acquire);
    const std::uint64_t shared = state_.load(std::memory_order_acquire) & count_mask;
    const std::uint64_t spawned = home_spawned_.load(std::memory_order_acquire);
    return (spawned - finished) * one_job + shared == 0;
  }
  // wait() and the destructor's wait: the home first runs what it can from
  // its own deque inline (wait_at_home()), then the general wait.
  void wait_until_idle() {
    if (home_ == nullptr || detail::tls.self != home_ || !wait_at_home()) wait_idle();
  }
  void wait_idle();
  // wait() after a cancel: makes the group fresh, and rethrows the first
  // exception a job threw, if any; else returns group_status::cancelled.
  group_status take_error();
  // The destructor's wait, and its hand-over of an uncollected exception.
  void finish_before_destruction() noexcept;

  // A worker in wait_idle() about to nap until the next finish_shared()
  // (or the backoff's pause) ends; false if the group is idle already.
  bool announce_nap(detail::parker& nap) noexcept;

  // A thread blocked in wait_idle(): a node of waiters_, on its stack.
  struct blocked_waiter {
    detail::parker* parker;
    blocked_waiter* next;
  };

  // Bit 0: threads are blocked in wait_idle(), listed in waiters_ (only in
  // a group without a home). Bit 1: a worker naps in wait_idle() and
  // napper_ names its parker. The rest: jobs spawned and not finished,
  // in units of one_job, leaving out the jobs the home spawned, whose finish
  // elsewhere it subtracts (so with a home it may wrap below zero, see
  // idle()).
  static constexpr std::uint64_t waiter_bit = 1;
  static constexpr std::uint64_t napper_bit = 2;
  static constexpr std::uint64_t one_job = 4;
  static constexpr std::uint64_t count_mask = ~(waiter_bit | napper_bit);

  pool& pool_;
  // The worker that made the group, when a worker of pool_ did: its spawns
  // and the finish of those it runs itself are counted with plain stores in
  // the two counters below, not with read-modify-writes of state_.
  detail::worker* const home_;
  std::atomic<std::uint64_t> state_{0};
  std::atomic<std::uint64_t> home_spawned_{0};   // written only by the home
  std::atomic<std::uint64_t> home_finished_{0};  // written only by the home
  // The threads blocked in wait_idle(), each on its own stack until the job
  // that brings the count to zero unparks it. Guarded by mutex_: the list is
  // non-empty exactly while waiter_bit is set.
  blocked_waiter* waiters_ = nullptr;
  // Written before napper_bit is set, read by finish_shared(): a worker's
  // nap parker (detail::worker::nap), which lives as long as the pool.
  std::atomic<detail::parker*> napper_{nullptr};
  std::atomic<bool> cancelled_{false};
  // Home only: how many of slots_ the home has taken since its last wait()
  // found the group idle (then none is in use).
  std::uint32_t slots_used_ = 0;
  std::mutex mutex_;
  std::exception_ptr error_;  // guarded by mutex_
  slot_space slots_[slot_count];
};

}  // namespace weft
