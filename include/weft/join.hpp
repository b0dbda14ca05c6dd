// weft::join: run two callables, possibly in parallel, and return both results.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "detail/context.hpp"
#include "detail/job.hpp"
#include "detail/latch.hpp"
#include "detail/local.hpp"
#include "detail/scheduler.hpp"
#include "future.hpp"
#include "pool.hpp"

namespace weft {

namespace detail {

template <class G>
struct stealable_half;

// Calls f, turning a void result into std::monostate.
template <class F>
[[gnu::always_inline]] inline result_t<std::invoke_result_t<F&>> call_half(F& f) {
  if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
    f();
    return {};
  } else {
    return f();
  }
}

struct join_access {
  // join() on a worker of p: the fast path (docs/deque.md, "The private
  // part"), where a join whose second half is not stolen costs a few plain
  // loads and stores. Inlined into the caller: in bench/fib that was faster
  // than a call of its own (5.6 against 7.5 ms for fib(30) on 2 workers,
  // medians of 4 alternating runs, with an earlier layout of the deque),
  // although GCC then saves six registers in every caller, leaves of a
  // recursion included. Private: the second half goes to the private part
  // of the deque (the deque publishes it once its public part runs dry);
  // else it is public at once, for forks that want an idle worker to take
  // the half while the first one runs long (the algorithms' few, large
  // pieces).
  template <bool Private, class F, class G>
  static auto on_worker(pool& p, worker& self, F& f, G& g);
  // weft::join, with the choice above.
  template <bool Private, class F, class G>
  static auto fork(F& f, G& g);
  // Everywhere else: a sequential pool, a thread that is not p's worker.
  template <class F, class G>
  [[gnu::noinline]] static auto elsewhere(pool& p, F& f, G& g);
  // The second half was stolen or is not on top of the deque (j is what the
  // pop returned): runs what lies above it, helps until it is done, and
  // returns its result or rethrows its exception.
  template <class G>
  [[gnu::noinline]] static result_t<std::invoke_result_t<G&>> take_back(pool& p, worker& self,
                                                                        stealable_half<G>& right,
                                                                        job* j);
  // f threw: finishes the second half (its result and exception are
  // dropped), then the caller rethrows f's.
  template <class G>
  [[gnu::noinline]] static void finish_after_throw(pool& p, worker& self,
                                                   stealable_half<G>& right) noexcept;
  // The thief of a half whose joiner, worker `index` of p, naps: wakes it.
  static void wake_joiner(pool& p, std::size_t index) noexcept { local::nap_of(p, index).unpark(); }
  // A half forked from outside the pool has finished.
  static void count_finished(pool& p, job_cache& c, unsigned epoch) noexcept {
    scheduler::count_finished(p, c, epoch, 1);
  }
  // The epoch parity of a half a worker of p forked under `scope`.
  static unsigned epoch_of(const pool& p, const running_scope* scope) noexcept {
    unsigned epoch = 0;
    if (!running_scope::find(scope, &p, epoch)) epoch = scheduler::spawn_epoch(p);
    return epoch;
  }
};

// The second half of a join, in the joining thread's stack frame, which
// another thread may take from a queue and run. Only the fields a thief needs
// are written before it is queued; the outcome of a stolen run is
// constructed by the thief in raw storage and consumed by the joiner
// (take()), so a half that is never stolen costs no constructor or
// destructor of its result.
template <class G>
struct stealable_half : job {
  using result = result_t<std::invoke_result_t<G&>>;
  enum : unsigned char { value_set = 1, error_set };

  explicit stealable_half(G& g) noexcept : fn(&g) { this->run = &run_stolen; }
  stealable_half(const stealable_half&) = delete;
  stealable_half& operator=(const stealable_half&) = delete;
  // The joiner consumes a stolen half's outcome with take() or discard()
  // before it returns, whichever way it returns.
  ~stealable_half() = default;

  // Run by whoever took this half from a queue; the joining thread may return
  // (and this object vanish) as soon as finished() holds. A worker's fork:
  // the half belongs to the job that forked it, and jobs it spawns count in
  // that job's epoch, which the thief finds from the joiner's innermost
  // running job (its scope, and those below it, stay alive and unchanged on
  // the joiner's stack until the half has finished).
  static void run_stolen(job* base) noexcept {
    auto* self = static_cast<stealable_half*>(base);
    pool* const forked_in = self->forked_in;
    if (worker* const w = tls.self; w != nullptr) w->forked_with_others = true;  // search_limit()
    {
      const running_scope running{forked_in, join_access::epoch_of(*forked_in, self->scope)};
      self->run_here();
    }
    self->mark_finished(*forked_in);
  }

  void run_here() noexcept {
    try {
      ::new (static_cast<void*>(storage)) result(call_half(*fn));
      outcome = value_set;
    } catch (...) {
      ::new (static_cast<void*>(storage)) std::exception_ptr(std::current_exception());
      outcome = error_set;
    }
  }

  // The thief's last touch of the half: whether it has finished is a bit of
  // the job's flags (job_flags::finished), which the joiner's constructor
  // wrote anyway, instead of a latch of its own that every join would have
  // to initialise (one store fewer per join: measured in bench/fib). The
  // joiner polls it, and writes the flags only to announce a nap; if it
  // did, the thief unparks it (`in`: the pool the half was forked in, read
  // before the half ran, since the joiner may return, and the half vanish,
  // as soon as this RMW is done).
  void mark_finished(pool& in) noexcept {
    // Release pairs with the acquire load in finished(): the outcome
    // written by run_here() is visible to the joiner. An RMW, so that it
    // and the joiner's CAS in announce_nap() come in one order: either the
    // joiner sees `finished` and does not nap, or this sees its nap.
    const std::uint32_t before =
        word_ref{flags}.fetch_or(job_flags::finished, std::memory_order_release);
    if ((before & job_flags::joiner_parked) != 0) [[unlikely]] {
      join_access::wake_joiner(in, before >> job_flags::purge_stamp_shift);
    }
  }

  // The joiner, worker `index`, about to nap on its parker until the thief
  // is done: false if it is done already; else the thief will unpark it.
  bool announce_nap(std::size_t index) noexcept {
    word_ref word{flags};
    std::uint32_t f = word.load(std::memory_order_relaxed);
    const auto parked = static_cast<std::uint32_t>(job_flags::joiner_parked |
                                                   (index << job_flags::purge_stamp_shift));
    do {
      if ((f & job_flags::finished) != 0) return false;
      if ((f & job_flags::joiner_parked) != 0) return true;  // announced by an earlier nap
      // Relaxed: the word itself is all the thief reads (see mark_finished()).
    } while (!word.compare_exchange_weak(f, f | parked, std::memory_order_relaxed));
    return true;
  }

  // The joiner: whether a thief has run the half to its end.
  [[nodiscard]] bool finished() noexcept {
    // Acquire: pairs with the release store in mark_finished().
    return (word_ref{flags}.load(std::memory_order_acquire) & job_flags::finished) != 0;
  }

  // The joiner, once the half has finished: the stolen run's result, or its
  // exception rethrown.
  result take() {
    if (outcome == error_set) {
      auto* e = std::launder(reinterpret_cast<std::exception_ptr*>(storage));
      std::exception_ptr error = std::move(*e);
      e->~exception_ptr();
      std::rethrow_exception(error);
    }
    auto* v = std::launder(reinterpret_cast<result*>(storage));
    result r = std::move(*v);
    v->~result();
    return r;
  }

  // The joiner, once the half has finished, when the outcome is not wanted.
  void discard() noexcept {
    if (outcome == error_set) {
      std::launder(reinterpret_cast<std::exception_ptr*>(storage))->~exception_ptr();
    } else {
      std::launder(reinterpret_cast<result*>(storage))->~result();
    }
  }

  G* fn;
  pool* forked_in;  // the pool it was queued in
  // A worker's fork (run_stolen): the forking thread's innermost running
  // job, if any.
  const running_scope* scope;
  unsigned char outcome;  // written by the thief, before it marks the half finished
  alignas(result) alignas(std::exception_ptr) unsigned char storage
      [sizeof(result) > sizeof(std::exception_ptr) ? sizeof(result) : sizeof(std::exception_ptr)];
};

// The second half of a join forked by a thread that is not a worker: a job
// of its own, counted in its ticket's epoch, which the forking thread awaits
// as it awaits any job (a latch it may block on).
template <class G>
struct counted_half : stealable_half<G> {
  explicit counted_half(G& g) noexcept : stealable_half<G>{g} { this->run = &run_counted; }

  static void run_counted(job* base) noexcept {
    auto* self = static_cast<counted_half*>(base);
    pool* const forked_in = self->forked_in;
    job_cache* const counted = self->counted;
    const unsigned epoch = self->epoch;
    {
      const running_scope running{forked_in, epoch};
      self->run_here();
    }
    self->done.set();
    // Last: the pool may be destroyed once it counts as finished.
    join_access::count_finished(*forked_in, *counted, epoch);
  }

  latch done;
  unsigned epoch = 0;            // the epoch parity of its ticket
  job_cache* counted = nullptr;  // the cache it is counted in
};

template <bool Private, class F, class G>
[[gnu::always_inline]] inline auto join_access::on_worker(pool& p, worker& self, F& f, G& g) {
  stealable_half<G> right{g};
  right.forked_in = &p;
  // The joiner's innermost job, for a thief to find the epoch in (one load
  // here instead of a walk on every join).
  right.scope = tls.running;
  if constexpr (Private) {
    // Thieves see it once the deque publishes it (when its public part runs
    // dry), and only then do sleepers need a word.
    local::push_private(p, self, &right);
  } else {
    local::push_public(p, self, &right);
  }
  using left_result = result_t<std::invoke_result_t<F&>>;
  using right_result = typename stealable_half<G>::result;
  left_result a = [&]() -> left_result {
    try {
      return call_half(f);
    } catch (...) {
      finish_after_throw(*tls.owner, *tls.self, right);
      throw;
    }
  }();
  // Take the right half back: almost always the private item on top. The
  // worker is read again rather than kept across f (the same one: a thread
  // stays the worker it is), and again after the pop, which may be a call:
  // kept across that call it would cost the caller a register to save.
  job* j = tls.self->deque.pop_expecting_private();
  if (j == &right) [[likely]] {
    // g's exception, if any, propagates: both halves have finished.
    right_result b = call_half(g);
    return std::pair<left_result, right_result>{std::move(a), std::move(b)};
  }
  right_result b = take_back(*tls.owner, *tls.self, right, j);
  return std::pair<left_result, right_result>{std::move(a), std::move(b)};
}

template <bool Private, class F, class G>
[[gnu::always_inline]] inline auto join_access::fork(F& f, G& g) {
  const context& ctx = tls;
  // A worker (self is set only on one of ctx.owner's worker threads, never
  // while it runs a sequential pool's jobs).
  if (ctx.self != nullptr) [[likely]]
    return on_worker<Private>(*ctx.owner, *ctx.self, f, g);
  pool* owner = ctx.owner != nullptr ? ctx.owner : ctx.helping;
  return elsewhere(owner != nullptr ? *owner : default_pool(), f, g);
}

template <class G>
result_t<std::invoke_result_t<G&>> join_access::take_back(pool& p, worker& self,
                                                          stealable_half<G>& right, job* j) {
  // Jobs that f spawned and left on top of the half are ours to run
  // meanwhile; an empty pop means it was stolen.
  for (;; j = self.deque.pop()) {
    if (j == &right) return call_half(*right.fn);
    if (j == nullptr) break;
    detail::worker::bump(self.counts.jobs);
    local::execute(p, j);
  }
  self.forked_with_others = true;  // our half went to another thread: search_limit()
  auto stolen_done = [&right] { return right.finished(); };
  // With nothing to run, keep yielding for as long as an idle worker
  // searches (the halves of a parallel loop end within tens of
  // microseconds of each other, and a parked joiner costs a futex wake-up
  // on the join's critical path), then nap until the thief is done rather
  // than sleep out the backoff's 50-800 us pauses: a join returned up to
  // that much after its half finished (docs/waiting.md, "A worker's wait that
  // finds nothing to run").
  const auto began = std::chrono::steady_clock::now();
  auto nap = [&right, &self, began](std::chrono::microseconds d) {
    if (std::chrono::steady_clock::now() - began < idle_spin_time) {
      std::this_thread::yield();
    } else if (right.announce_nap(self.index)) {
      self.nap.park_for(d);
    }
  };
  local::help_until(p, stolen_done, nap);
  return right.take();
}

template <class G>
void join_access::finish_after_throw(pool& p, worker& self, stealable_half<G>& right) noexcept {
  try {
    (void)take_back(p, self, right, self.deque.pop());
  } catch (...) {  // NOLINT(bugprone-empty-catch): f's exception wins (join's contract)
  }
}

template <class F, class G>
auto join_access::elsewhere(pool& p, F& f, G& g) {
  using left_result = result_t<std::invoke_result_t<F&>>;
  using right_result = typename stealable_half<G>::result;
  using both = std::pair<left_result, right_result>;
  if (scheduler::sequential(p)) {
    left_result a = [&]() -> left_result {
      try {
        return call_half(f);
      } catch (...) {
        try {
          (void)call_half(g);
        } catch (...) {  // NOLINT(bugprone-empty-catch): f's exception wins
        }
        throw;
      }
    }();
    right_result b = call_half(g);
    return both{std::move(a), std::move(b)};
  }
  // From outside the pool the right half is a job of its own: counted, so
  // that the pool is not destroyed (or its wait() satisfied) with it queued,
  // and pushed as any outside submission.
  counted_half<G> right{g};
  const scheduler::ticket t = scheduler::count_spawn(p);
  const scheduler::submission_guard guard{p, t};  // destroyed last
  right.forked_in = &p;
  right.epoch = t.epoch;
  right.counted = t.cache;
  try {
    scheduler::push(p, &right);
  } catch (...) {
    scheduler::count_finished(p, *t.cache, t.epoch, 1);
    throw;
  }
  std::exception_ptr left_error;
  std::optional<left_result> a;
  try {
    a.emplace(call_half(f));
  } catch (...) {
    left_error = std::current_exception();
  }
  scheduler::await(p, right.done);
  if (left_error) {
    right.discard();
    std::rethrow_exception(left_error);
  }
  right_result b = right.take();
  // NOLINTNEXTLINE(bugprone-unchecked-optional-access): set unless f threw
  return both{std::move(*a), std::move(b)};
}

}  // namespace detail

/// Runs f() and g(), possibly in parallel, and returns {f(), g()} (a void
/// result becomes std::monostate). On a worker it uses that worker's pool and
/// allocates nothing. In a job that a waiting outside thread runs as a pool's
/// helper (this_worker::index() == max_size()) it uses that pool; elsewhere it
/// uses weft::default_pool(). Off a worker, g() is submitted as a job and f()
/// runs on the calling thread. If either throws, the exception is rethrown
/// once both have finished (f's first if both throw).
///
/// On a worker, g() waits in the private part of the worker's deque while
/// other workers have older work to take from it, and is offered to them
/// when they have none (docs/deque.md, "The private part"); a join that
/// nobody steals costs a few plain loads and stores. g() may therefore run
/// after f() on the same thread: f() must never wait for g().
template <class F, class G>
[[gnu::always_inline]] inline auto join(F&& f, G&& g) {
  return detail::join_access::fork<true>(f, g);
}

namespace detail {

// join_each(): f(lo) .. f(hi - 1), the range halved with join until one
// index is left, so n calls make n - 1 joins and no heap job (hi > lo).
template <class F>
void join_range(F& f, std::size_t lo, std::size_t hi) {
  if (hi - lo == 1) {
    f(lo);
    return;
  }
  const std::size_t mid = lo + (hi - lo) / 2;
  (void)join([&f, lo, mid] { join_range(f, lo, mid); }, [&f, mid, hi] { join_range(f, mid, hi); });
}

}  // namespace detail

/// Runs f(0), f(1), ..., f(n - 1), possibly in parallel, and returns once
/// all have finished: the n-way join, for the shape "fork every child, wait
/// for all of them" (a skynet node, a tree with n children). It halves the
/// range with weft::join, so it takes join's fast path on a worker (n - 1
/// joins, no allocation, no shared counter) and costs far less than a
/// task_group with n spawns; a group is for work whose pieces are not known
/// up front, or that must be cancelled. Nothing happens for n == 0. f is
/// called as `f(i)` with a std::size_t, from several threads at once, and
/// its results are dropped: write them to memory of your own, one place per
/// index. If calls throw, the exception of the lowest index that threw is
/// rethrown once every call has finished (the others are dropped).
///
/// join's contract holds for every pair of calls: a call may run after
/// another on the same thread, so no f(i) may wait for an f(j) (use a
/// task_group for pieces that wait for each other).
template <class F>
void join_each(std::size_t n, F&& f) {
  static_assert(std::is_invocable_v<F&, std::size_t>,
                "join_each(n, f): f must be callable as f(i) with a std::size_t index");
  if (n == 0) return;
  detail::join_range(f, 0, n);
}

}  // namespace weft
