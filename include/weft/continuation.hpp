// Continuations and future collections: future::then, weft::when_all and
// weft::when_any. Each makes one job that is counted by the pool when it is
// made and queued only when the futures it waits for are ready, told by
// their latches: no thread blocks meanwhile (docs/continuations.md). When no
// future has a pool that still takes work (each one's job has finished, and
// its pool is gone or going), each does its work on the calling thread
// instead and returns a future that is ready and has no pool.
#pragma once

#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "detail/context.hpp"
#include "detail/job.hpp"
#include "detail/latch.hpp"
#include "detail/scheduler.hpp"
#include "detail/visit.hpp"
#include "errors.hpp"
#include "future.hpp"
#include "pool.hpp"

namespace weft {

/// What when_all's future holds: the values in order, or nothing for void.
template <class T>
using when_all_result_t = std::conditional_t<std::is_void_v<T>, void, std::vector<T>>;

namespace detail {

// The pool's accounting for the jobs below, through the scheduler's door.
struct continuation_access {
  // Counts one job for the calling thread, as submit() does; the guard ends
  // the submission (the caller's last touch of the pool) when it goes.
  struct counted {
    pool& owner;
    scheduler::ticket ticket;
    explicit counted(pool& p) : owner(p), ticket(scheduler::count_spawn(p)) {}
    counted(const counted&) = delete;
    counted& operator=(const counted&) = delete;
    ~counted() { scheduler::end_submission(owner, ticket); }
  };
  static std::size_t push(pool& p, job* j) noexcept { return scheduler::publish(p, &j, 1); }
  static void count_finished(pool& p, job_cache& c, unsigned epoch) noexcept {
    scheduler::count_job_finished(p, c, epoch);
  }
  static void uncount(pool& p, const scheduler::ticket& t) noexcept {
    scheduler::count_finished(p, *t.cache, t.epoch, 1);
  }
  static void report_error(pool& p, std::exception_ptr e) noexcept {
    scheduler::report_error(p, std::move(e));
  }
  static std::uint32_t life(const pool& p) noexcept { return scheduler::life(p); }
};

// Counts one job, as `counted` does, on the pool of the future whose state is
// s, if that pool still takes it: c is engaged then, and the pool lives until
// c is gone and the job has finished. A pool lives until the last of its
// jobs has finished, so a future whose job has not finished has its pool,
// which a visit holds while it counts (docs/waiting.md, "A wait racing the
// pool's destructor"); then the count throws pool_closed, as submit does,
// once the destruction has begun. A future whose job has finished may have
// outlived its pool; only the registry of live pools can tell, and while it
// says the pool is there its destructor cannot begin (detail/visit.hpp).
// Leaves c empty (and returns false) if the pool is gone or its destruction
// has begun, or if the future never had one.
template <class T>
bool count_on_pool_of(const future_state<T>* s, std::optional<continuation_access::counted>& c) {
  pool* const p = s->owner;
  if (p == nullptr) return false;  // made ready without a pool
  // Our own worker's pool (or the sequential pool whose jobs we run) lives
  // while we do; if the job has finished, the life number tells whether it
  // is the future's pool or a later one at the same address.
  const bool ours = tls.owner == p;
  if (!s->done.is_set()) {
    if (ours) {
      c.emplace(*p);
      return true;
    }
    const visit_scope visit{p};
    // seq_cst: the other half of the visit's Dekker pair.
    if (!s->done.is_set_now()) {
      c.emplace(*p);
      return true;
    }
  }
  if (ours && continuation_access::life(*p) == s->owner_life) {
    c.emplace(*p);  // its own jobs may spawn while it closes
    return true;
  }
  const live_pool_lock live{p, s->owner_life};
  if (!live.alive()) return false;
  c.emplace(*p);  // not closing: its destructor waits for the registry
  return true;
}

// The state of a future that is ready from the start and has no pool: what
// then, when_all and when_any return when they do their work themselves.
// Only the future refers to it.
template <class U>
struct ready_state final : future_state<U> {
  ready_state() noexcept {
    this->run = nullptr;  // never queued
    this->refs.store(1, std::memory_order_relaxed);
    this->destroy = &destroy_state;
  }
  static void destroy_state(future_state<U>* s) noexcept { delete static_cast<ready_state*>(s); }
};

// A job counted by its pool from the moment it is made, and queued once
// what it waits for is ready (queue()). It runs gather() and then finishes
// as a submitted job does.
template <class U, class Self>
struct deferred_job : future_state<U> {
  deferred_job(pool& owner, const continuation_access::counted& c) noexcept {
    this->owner = &owner;
    this->owner_life = continuation_access::life(owner);
    this->counted = c.ticket.cache;
    this->epoch = c.ticket.epoch;
    this->run = &run_job;
    this->destroy = &destroy_job;
  }

  // Any thread, once: makes the job visible to the pool's workers. The job
  // is counted and unfinished, so the pool is alive. If no queue can take
  // it (out of memory), it runs here.
  void queue() noexcept {
    if (continuation_access::push(*this->owner, this) == 0) run_job(this);
  }

  static void run_job(job* base) noexcept {
    auto* self = static_cast<Self*>(base);
    pool* owner = self->owner;
    job_cache& counted = *self->counted;
    const unsigned epoch = self->epoch;
    {
      const running_scope running{owner, epoch};
      try {
        self->gather();
      } catch (...) {
        self->error = std::current_exception();
      }
    }
    // As future_job::run_job: once the latch is set the future may take the
    // result and go; the last owner frees the state.
    self->done.set();
    if (self->drop()) {
      if (self->error) continuation_access::report_error(*owner, self->error);
      destroy_job(self);
    }
    // Last: the pool may be destroyed once the job counts as finished.
    continuation_access::count_finished(*owner, counted, epoch);
  }

  static void destroy_job(future_state<U>* s) noexcept { delete static_cast<Self*>(s); }
};

// Takes a ready future's exception out of its state (so nothing reports it
// as unretrieved) and empties the future; nullptr if it holds a value.
template <class T>
std::exception_ptr take_error(future<T>& f) noexcept {
  future_state<T>* s = future_access::state(f);
  if (!s->error) return nullptr;
  std::exception_ptr e = std::exchange(s->error, nullptr);
  f = future<T>{};
  return e;
}

// future::then's job: runs f with the first future's value.
template <class R, class U, class F>
struct then_job final : deferred_job<U, then_job<R, U, F>>, latch_waiter {
  template <class G>
  then_job(pool& owner, const continuation_access::counted& c, future<R>&& first, G&& g)
      : deferred_job<U, then_job>(owner, c), first_(std::move(first)) {
    fn_.emplace(std::forward<G>(g));
    this->notify = [](latch_waiter* w) noexcept { static_cast<then_job*>(w)->queue(); };
  }

  void gather() {
    struct reset_fn {
      std::optional<F>& fn;
      // The callable and its captures go before the future can see the
      // result, so their destructors never run after get() returned.
      ~reset_fn() { fn.reset(); }
    } const reset{fn_};
    if (std::exception_ptr e = take_error(first_)) {
      this->error = std::move(e);  // f is skipped
      return;
    }
    // NOLINTBEGIN(bugprone-unchecked-optional-access): engaged until here
    if constexpr (std::is_void_v<R>) {
      first_.get();
      if constexpr (std::is_void_v<U>) {
        (*fn_)();
        this->value.emplace();
      } else {
        this->value.emplace((*fn_)());
      }
    } else {
      if constexpr (std::is_void_v<U>) {
        (*fn_)(first_.get());
        this->value.emplace();
      } else {
        this->value.emplace((*fn_)(first_.get()));
      }
    }
    // NOLINTEND(bugprone-unchecked-optional-access)
  }

  future<R> first_;
  std::optional<F> fn_;
};

// future::then when no pool takes the continuation: first is ready, and f
// runs here, as then_job::gather() would run it; the returned future is
// ready. Copying f or allocating the state may throw, before first is taken.
template <class U, class R, class F>
future<U> then_here(future<R>& first, F&& f) {
  std::optional<std::decay_t<F>> fn{std::in_place, std::forward<F>(f)};
  auto* s = new ready_state<U>;
  future<U> result = future_access::make<U>(s);
  future<R> taken = std::move(first);
  if (std::exception_ptr e = take_error(taken)) {
    s->error = std::move(e);  // f is skipped
  } else {
    try {
      // NOLINTBEGIN(bugprone-unchecked-optional-access): engaged until reset
      if constexpr (std::is_void_v<R>) {
        taken.get();
        if constexpr (std::is_void_v<U>) {
          (*fn)();
          s->value.emplace();
        } else {
          s->value.emplace((*fn)());
        }
      } else {
        if constexpr (std::is_void_v<U>) {
          (*fn)(taken.get());
          s->value.emplace();
        } else {
          s->value.emplace((*fn)(taken.get()));
        }
      }
      // NOLINTEND(bugprone-unchecked-optional-access)
    } catch (...) {
      s->error = std::current_exception();
    }
  }
  fn.reset();  // as in a job: the callable goes before the future is ready
  s->done.set();
  return result;
}

// One subscription of a collection's job to one future's latch.
template <class Job>
struct member_waiter final : latch_waiter {
  Job* job = nullptr;
  std::size_t index = 0;
};

// Throws usage_error for an empty future in the vector.
template <class T>
void check_collection(const std::vector<future<T>>& fs, const char* what) {
  for (std::size_t i = 0; i < fs.size(); ++i) {
    if (!fs[i].valid()) {
      throw usage_error(std::string{"weft::"} + what + ": the future at index " +
                        std::to_string(i) +
                        " is empty (default-constructed, moved from, or its get() was already "
                        "called); pass only futures returned by submit, then or when_all");
    }
  }
}

// Counts a collection's job on the pool it runs on: the first future's, or,
// if that one is gone or going, the next future's that is not, in index
// order (count_on_pool_of()). c stays empty if there is none: every future
// is then ready (one that is not has its pool).
template <class T>
void count_collection(const std::vector<future<T>>& fs,
                      std::optional<continuation_access::counted>& c) {
  // A pool found gone stays gone: its other futures ask nobody.
  const pool* gone = nullptr;
  std::uint32_t gone_life = 0;
  for (const future<T>& f : fs) {
    const future_state<T>* s = future_access::state(f);
    if (s->owner == gone && s->owner_life == gone_life && s->done.is_set()) continue;
    if (count_on_pool_of(s, c)) return;
    gone = s->owner;
    gone_life = s->owner_life;
  }
}

// A ready future's result into when_all's values (or its first exception,
// the first in index order; the values after it are dropped unread).
// noexcept: a value whose move throws becomes the exception, as if its job
// had thrown.
template <class T, class Values>
void take_result(future<T>& f, Values& values, std::exception_ptr& first_error) noexcept {
  if (std::exception_ptr e = take_error(f)) {
    if (!first_error) first_error = std::move(e);
    return;
  }
  try {
    if constexpr (std::is_void_v<T>) {
      f.get();
    } else if (first_error) {
      f = future<T>{};  // dropped unread, here rather than at the end
    } else {
      values.push_back(f.get());
    }
  } catch (...) {
    if (!first_error) first_error = std::current_exception();
  }
}

// when_all when no pool takes its job: every future is ready, and their
// results are taken here, into a future that is ready.
template <class T>
future<when_all_result_t<T>> all_here(std::vector<future<T>>& futures) {
  using U = when_all_result_t<T>;
  auto* s = new ready_state<U>;
  future<U> result = future_access::make<U>(s);
  struct no_values {};
  std::conditional_t<std::is_void_v<T>, no_values, std::vector<T>> values;
  if constexpr (!std::is_void_v<T>) values.reserve(futures.size());
  std::exception_ptr first_error;
  for (future<T>& f : futures) take_result(f, values, first_error);
  futures.clear();
  if (first_error) {
    s->error = std::move(first_error);
  } else if constexpr (std::is_void_v<T>) {
    s->value.emplace();
  } else {
    s->value.emplace(std::move(values));
  }
  s->done.set();
  return result;
}

// A future of index i, ready (when_any with no pool to run on).
inline future<std::size_t> ready_index(std::size_t i) {
  auto* s = new ready_state<std::size_t>;
  s->value.emplace(i);
  s->done.set();
  return future_access::make<std::size_t>(s);
}

// when_all's job: walks its futures in index order, waiting on one at a
// time, taking each result as it passes it, and is queued once the walk has
// passed the last (docs/continuations.md, "when_all's walk").
template <class T>
struct all_job final : deferred_job<when_all_result_t<T>, all_job<T>> {
  all_job(pool& owner, const continuation_access::counted& c, std::vector<future<T>>&& fs)
      : deferred_job<when_all_result_t<T>, all_job>(owner, c), futures(std::move(fs)) {
    if constexpr (!std::is_void_v<T>) values.reserve(futures.size());
    waiter.job = this;
    waiter.notify = &arrived;
  }

  static void arrived(latch_waiter* w) noexcept {
    auto* m = static_cast<member_waiter<all_job>*>(w);
    m->job->walk_from(m->index);
  }

  // Passes every future from `first` on that is ready, taking its result
  // (or its exception: the first in index order is kept, and the values
  // after it are dropped unread), so that the futures are consumed while
  // later ones still run, on whichever thread walks; subscribes the waiter
  // to the first that is not ready, whose set() continues the walk there
  // (latch::set() reads the waiter's link before notifying it, so the
  // notification may subscribe it again), or queues the job after the last.
  // One thread walks at a time: when_all's caller, then whoever sets the
  // future waited on; neither touches the job after its subscribe succeeds
  // or after queue(). subscribe()'s acquire load (and CAS) pair with set()'s
  // exchange, so the walker sees the result it takes, and queue() publishes
  // what it took to the job's gather().
  void walk_from(std::size_t first) noexcept {
    for (std::size_t i = first; i < futures.size(); ++i) {
      waiter.index = i;
      if (future_access::state(futures[i])->done.subscribe(&waiter)) return;
      take(futures[i]);
    }
    this->queue();
  }

  // A ready future's result into the job.
  void take(future<T>& f) noexcept { take_result(f, values, first_error); }

  void gather() {
    futures.clear();
    // Taken out, so that the job keeps no reference: the last one is then
    // the future's, and the exception is freed by whoever catches it (a
    // reference dropped here would race, for ThreadSanitizer, with the
    // catcher's reads: libstdc++'s count is not instrumented).
    if (first_error) std::rethrow_exception(std::exchange(first_error, nullptr));
    if constexpr (std::is_void_v<T>) {
      this->value.emplace();
    } else {
      this->value.emplace(std::move(values));
    }
  }

  struct no_values {};
  std::vector<future<T>> futures;  // each empty once taken
  std::conditional_t<std::is_void_v<T>, no_values, std::vector<T>> values;
  std::exception_ptr first_error;
  member_waiter<all_job> waiter;  // subscribed to at most one future at a time
};

// when_any's job: queued by the first of its futures to finish. Its state is
// shared by its future, the job, and every waiter still subscribed (a latch
// notifies its waiter after the job may have finished), so refs counts them
// all and whoever drops last frees it.
struct any_job final : deferred_job<std::size_t, any_job> {
  static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

  any_job(pool& owner, const continuation_access::counted& c, std::size_t n)
      : deferred_job<std::size_t, any_job>(owner, c), waiters(n) {
    // The future, the job, and one per waiter.
    refs.store(static_cast<int>(n) + 2, std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) {
      waiters[i].job = this;
      waiters[i].index = i;
      waiters[i].notify = &arrived;
    }
  }

  static void arrived(latch_waiter* w) noexcept {
    auto* m = static_cast<member_waiter<any_job>*>(w);
    m->job->ready_at(m->index, 1);
  }

  // The future at `index` is ready; `refs_done` waiters will not touch the
  // state any more.
  void ready_at(std::size_t index, int refs_done) noexcept {
    std::size_t expected = none;
    // Relaxed: the winner queues the job right after, and the push publishes
    // the index to whoever runs it.
    if (winner.compare_exchange_strong(expected, index, std::memory_order_relaxed)) queue();
    // acq_rel: as future_state::drop(); the last owner frees the state.
    if (refs.fetch_sub(refs_done, std::memory_order_acq_rel) == refs_done) destroy_job(this);
  }

  void gather() {
    // Relaxed: see ready_at().
    value.emplace(winner.load(std::memory_order_relaxed));
  }

  std::vector<member_waiter<any_job>> waiters;
  std::atomic<std::size_t> winner{none};
};

}  // namespace detail

// Hidden from Doxygen, which documents then() at its declaration (future.hpp)
// and would list this definition a second time.
/// \cond
template <class R>
template <class F>
future<detail::then_result_t<R, F>> future<R>::then(F&& f) && {
  using U = detail::then_result_t<R, F>;
  if constexpr (std::is_void_v<R>) {
    static_assert(std::is_invocable_v<std::decay_t<F>&>,
                  "weft::future<void>::then(f): f must be callable with no arguments");
  } else {
    static_assert(std::is_invocable_v<std::decay_t<F>&, R&&>,
                  "weft::future<R>::then(f): f must be callable with the value as an R&&");
  }
  static_assert(!std::is_reference_v<U>,
                "weft::future::then(f): f must return a value, not a reference (a future holds "
                "its value)");
  if constexpr (!std::is_same_v<U, detail::not_callable>) {
    if (state_ == nullptr) {
      throw usage_error(
          "weft::future::then: the future is empty (default-constructed, moved from, or its "
          "get() was already called); call then() once, on the future submit or then returned");
    }
    using job = detail::then_job<R, U, std::decay_t<F>>;
    std::optional<detail::continuation_access::counted> counted;
    detail::count_on_pool_of(state_, counted);
    if (!counted) {
      // The job has finished and no pool takes f: it runs here.
      return detail::then_here<U>(*this, std::forward<F>(f));
    }
    pool& owner = counted->owner;
    job* j = nullptr;
    try {
      j = new job(owner, *counted, std::move(*this), std::forward<F>(f));
    } catch (...) {
      detail::continuation_access::uncount(owner, counted->ticket);
      throw;
    }
    future<U> result = detail::future_access::make<U>(j);
    // The first future's latch queues the job once its job has finished; if
    // it has already, the job is queued now.
    if (!detail::future_access::state(j->first_)->done.subscribe(j)) j->queue();
    return result;
  } else {
    return {};
  }
}
/// \endcond

/// A future of all the futures' values, in order (future<void> for void
/// futures), ready once every one of them is; if any threw, it holds the
/// exception of the lowest index (the others are discarded). Takes the
/// futures; the gathering runs as a job of the first future's pool (or, if
/// that future's job has finished and its pool is gone or being destroyed,
/// of the next future's in index order that is not), counted from this call
/// on, and no thread blocks meanwhile. If no future has such a pool (they
/// are all ready), the results are gathered here and the returned future is
/// ready, as it is for an empty vector (a future of an empty vector). Throws
/// usage_error if a future is empty; pool_closed if the pool it would run on
/// is being destroyed and the future there has not finished (unless called
/// from one of the pool's jobs).
template <class T>
[[nodiscard]] future<when_all_result_t<T>> when_all(std::vector<future<T>> futures) {
  using job = detail::all_job<T>;
  detail::check_collection(futures, "when_all");
  std::optional<detail::continuation_access::counted> counted;
  detail::count_collection(futures, counted);
  if (!counted) return detail::all_here(futures);
  pool& owner = counted->owner;
  job* j = nullptr;
  try {
    j = new job(owner, *counted, std::move(futures));
  } catch (...) {
    detail::continuation_access::uncount(owner, counted->ticket);
    throw;
  }
  future<when_all_result_t<T>> result = detail::future_access::make<when_all_result_t<T>>(j);
  j->walk_from(0);  // from here on the walk owns j; only result is ours
  return result;
}

/// A future of the index of a future that is ready: the first to finish (or,
/// if some are ready already, the lowest index among those seen ready here).
/// The futures stay with the caller, who may get() them afterwards; the job
/// that finds the index runs on the pool when_all would choose, counted from
/// this call on, and no thread blocks meanwhile. If no future has such a
/// pool (they are all ready), the returned future is ready with index 0. An
/// empty vector gives a ready future of index `static_cast<std::size_t>(-1)`,
/// as the Concurrency TS's when_any of an empty range. Throws usage_error if
/// the vector holds an empty future or more than INT_MAX - 2 futures;
/// pool_closed as when_all does.
template <class T>
[[nodiscard]] future<std::size_t> when_any(std::vector<future<T>>& futures) {
  detail::check_collection(futures, "when_any");
  if (futures.size() > static_cast<std::size_t>(INT_MAX) - 2) {
    throw usage_error("weft::when_any: more futures than it can count; split the vector");
  }
  if (futures.empty()) return detail::ready_index(detail::any_job::none);
  std::optional<detail::continuation_access::counted> counted;
  detail::count_collection(futures, counted);
  if (!counted) return detail::ready_index(0);
  pool& owner = counted->owner;
  detail::any_job* j = nullptr;
  try {
    j = new detail::any_job(owner, *counted, futures.size());
  } catch (...) {
    detail::continuation_access::uncount(owner, counted->ticket);
    throw;
  }
  future<std::size_t> result = detail::future_access::make<std::size_t>(j);
  // Stops subscribing once one is seen ready; the waiters not subscribed
  // let go of the state at once.
  int unsubscribed = 0;
  std::size_t i = 0;
  for (; i < futures.size(); ++i) {
    if (!detail::future_access::state(futures[i])->done.subscribe(&j->waiters[i])) {
      ++unsubscribed;
      j->ready_at(i, 0);  // queues the job; its reference is dropped below
      ++i;
      break;
    }
  }
  unsubscribed += static_cast<int>(futures.size() - i);
  // Never the last reference: `result` holds one. acq_rel: as
  // future_state::drop().
  if (unsubscribed != 0) j->refs.fetch_sub(unsubscribed, std::memory_order_acq_rel);
  return result;
}

}  // namespace weft
