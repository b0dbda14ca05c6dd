// How a callable becomes a job the pool runs (docs/design.md, "Where jobs
// live"): functions over the pool's parts, not members of the pool; `p` is
// the pool the job is for. A job is counted (pool::counting), allocated from
// the counting cache, its callable built in place, then queued where it
// goes (any worker, a priority queue, one worker's mailbox), under the
// bound when the submitter is not one of the pool's own jobs. When it runs,
// run_posted() gives back its slot of the bound, runs or cancels it, and
// retires it. Included by weft/pool.hpp right after class pool; the front
// ends post through the doors.
#pragma once

#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

#include "../context.hpp"
#include "../job.hpp"

namespace weft {

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

struct pool::posting {
  // spawn_all's callables live in one block (weft/batch.hpp), for a range
  // that knows its size and has at least batch_block_min of them; jobs of
  // one layout, each a span of them, run them and split when a worker is
  // idle. Below that, a block's allocation and splits cost more than they
  // save: batches of 10 were 1.22-1.27x slower that way
  // (batches/1000000_by_10/spawn_all), those of 16 to 128 1.4-2.5x faster (a
  // test program, 1,000,000 empty jobs).
  static constexpr std::size_t batch_block_min = 32;
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

  // Allocates a heap job, stores `C{args...}` in it, counts it and queues it
  // (at d, under the pool's bound).
  template <class C, class... Args>
  static void post_to(pool& p, destination d, Args&&... args);
  template <class C, class... Args>
  static void post(pool& p, Args&&... args) {
    post_to<C>(p, destination{}, std::forward<Args>(args)...);
  }
  // post() by `self`, the calling thread's worker of this pool, onto its own
  // deque: counted with plain stores (no read-modify-write), and public at
  // once, so that an idle worker may take it whatever the spawner does next
  // (docs/deque.md, "Idle workers"). For a task_group's spawns on the
  // worker that made it.
  template <class C, class... Args>
  static void post_own(pool& p, detail::worker& self, Args&&... args);
  // Queues j, counted by count_own_spawn(), in the public part of self's
  // deque, as post_own() does. Throws only std::bad_alloc, and then j was
  // not queued. The private part is a join's alone: a job there is hidden
  // from thieves until its owner publishes it, which only a join's
  // contract ("f never waits for g") makes safe.
  [[gnu::always_inline]] static void push_own(pool& p, detail::worker& self, detail::job* j) {
    self.deque.push(j);
    p.sleep_.new_work();
  }
  // Stores C{args...} in j (allocated and counted for it) and makes it
  // runnable; if that throws, j is discarded (freed, counted finished).
  template <class C, class... Args>
  static void fill_posted(pool& p, detail::heap_job* j, Args&&... args);

  // Queues j, built and counted by ticket t, at d. Without a bound
  // (pool_options::capacity), or for one of our workers, that is all;
  // else dispatch_bounded() applies the overflow policy. Throws only while
  // j is still the caller's (queue_full, std::bad_alloc): once it returns
  // or hands j over, j is the pool's (or the overflow callable's).
  static void dispatch(pool& p, detail::job* j, destination d, const ticket& t) {
    if (!p.bound_.limited() || t.submission == 0) [[likely]] {
      push_to(p, j, d);
      return;
    }
    dispatch_bounded(p, j, d);
  }
  static void dispatch_bounded(pool& p, detail::job* j, destination d);
  static void push_to(pool& p, detail::job* j, destination d) {
    if (d.kind == destination::any) [[likely]] {
      p.push(j);
      return;
    }
    p.push_special(j, d);
  }
  // Whether the calling thread is running one of our jobs (on a worker, or
  // helping): its submissions are never held up by the bound.
  [[nodiscard]] static bool bounded_here(const pool& p) noexcept {
    return p.bound_.limited() && !p.in_own_job();
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

  // The state S of a future of callable g, counted by t (docs/design.md,
  // "Where jobs live"): in a block of t's cache when it fits, else with
  // new. Throws what allocating or constructing throws, leaving nothing
  // behind (the count is the caller's to undo).
  template <class S, class G>
  static S* make_state(pool& p, const ticket& t, G&& g);
  // submit() at d. Kept: a call whose caller has begun and waits for it (a
  // parallel algorithm's root job when its caller cannot stand in): purge()
  // does not drop it and the bound does not hold it up, as for the pool's
  // own jobs (docs/algorithms.md, "Where it runs").
  template <bool Kept = false, class F>
  static future<std::invoke_result_t<std::decay_t<F>&>> submit_checked(pool& p, destination d,
                                                                       F&& f);
};

template <class C, class... Args>
void pool::posting::post_to(pool& p, destination d, Args&&... args) {
  const ticket t = counting::count_spawn(p);
  const counting::submission_guard guard{p, t};  // destroyed last: the last touch of the pool
  detail::heap_job* j = nullptr;
  try {
    j = p.accounting_.allocate_job(*t.cache);
  } catch (...) {
    counting::count_finished(p, *t.cache, t.epoch, 1);
    throw;
  }
  j->epoch = t.epoch;
  fill_posted<C>(p, j, std::forward<Args>(args)...);
  try {
    dispatch(p, j, d, t);
  } catch (...) {
    detail::destroy_callable<C>(j);
    counting::discard(p, j);
    throw;
  }
}

template <class C, class... Args>
void pool::posting::fill_posted(pool& p, detail::heap_job* j, Args&&... args) {
  try {
    detail::construct_callable<C>(j, std::forward<Args>(args)...);
  } catch (...) {
    counting::discard(p, j);
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
void pool::posting::post_own(pool& p, detail::worker& self, Args&&... args) {
  detail::heap_job* j = self.cache.allocate();  // throws before anything is counted
  j->epoch = counting::count_own_spawn(p, self);
  fill_posted<C>(p, j, std::forward<Args>(args)...);
  try {
    push_own(p, self, j);
  } catch (...) {
    detail::destroy_callable<C>(j);
    counting::discard(p, j);
    throw;
  }
}

template <class C>
void pool::posting::run_posted(detail::job* base) noexcept {
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

template <class S, class G>
S* pool::posting::make_state(pool& p, const ticket& t, G&& g) {
  S* s = nullptr;
  if constexpr (detail::fits_state_block<S>) {
    const detail::accounting::state_memory m = p.accounting_.allocate_state(*t.cache);
    try {
      s = ::new (static_cast<void*>(m.block->bytes)) S(&p, std::forward<G>(g));
    } catch (...) {
      detail::release_state_block(m.slab, m.block);
      throw;
    }
    s->slab = m.slab;
  } else {
    s = new S(&p, std::forward<G>(g));
  }
  s->counted = t.cache;
  s->epoch = t.epoch;
  return s;
}

template <bool Kept, class F>
future<std::invoke_result_t<std::decay_t<F>&>> pool::posting::submit_checked(pool& p, destination d,
                                                                             F&& f) {
  using R = std::invoke_result_t<std::decay_t<F>&>;
  using state = detail::future_job<R, std::decay_t<F>>;
  const ticket t = counting::count_spawn(p);
  const counting::submission_guard guard{p, t};  // destroyed last: the last touch of the pool
  state* s = nullptr;
  try {
    s = make_state<state>(p, t, std::forward<F>(f));
    if constexpr (Kept) {
      s->flags = 0;  // not cancellable, not throttled
      push_to(p, s, d);
    } else {
      dispatch(p, s, d, t);
    }
  } catch (...) {
    if (s != nullptr) state::destroy_job(s);
    counting::count_finished(p, *t.cache, t.epoch, 1);
    throw;
  }
  return future<R>(s);
}

}  // namespace weft
