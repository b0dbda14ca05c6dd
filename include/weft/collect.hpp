// weft::collect and weft::collector: jobs whose results come back in the
// order they were spawned, with early termination (the Haskell scheduler's
// withScheduler and terminateWith). A task_group runs the jobs; the
// collector hands out result slots in spawn order (docs/collect.md).
#pragma once

#include <cassert>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "detail/scheduler.hpp"
#include "group.hpp"
#include "pool.hpp"

namespace weft {

namespace detail {
struct collect_access;

// The result types collect<R> can return: values it can move into the
// std::vector<R>.
template <class R>
concept collect_result =
    !std::is_void_v<R> && !std::is_reference_v<R> && std::is_move_constructible_v<R>;

// What collect's diagnostic overload returns: something `auto r =` takes.
struct no_results {};
}  // namespace detail

/// Where the jobs of one weft::collect call go. collect() passes it to its
/// body; jobs receive it too if they take a `collector<R>&`, and may spawn
/// more into it. Its results come back in spawn order. The first of
/// terminate_with() and an exception (of a job, of a spawn, of the body)
/// decides the outcome: jobs not started by then are skipped, running ones
/// see stop_requested() and finish, and collect() returns {v} or rethrows
/// that exception. An exception thrown after the outcome was decided goes
/// to the pool's error path (pool_options::on_error, or pool::wait()); a
/// terminate_with() after it is ignored (it returns false).
template <class R>
class collector {
 public:
  collector(const collector&) = delete;
  collector& operator=(const collector&) = delete;
  collector(collector&&) = delete;
  collector& operator=(collector&&) = delete;
  ~collector() = default;

  /// Spawns f() (f(collector&) if f takes the collector) as a job whose
  /// result, converted to R, takes the next place in the results. Any thread
  /// may call it while collect() has not returned: the body, a job of this
  /// collector, or a thread that one of them waits for. Does nothing once
  /// the outcome is decided. Throws as pool::spawn does; that exception
  /// also decides the outcome (if it is the first), since its place would
  /// stay empty.
  template <class F>
  void spawn(F&& f);

  /// Decides the outcome, unless it is decided already: collect() returns
  /// {value}; jobs not started are skipped and running ones see
  /// stop_requested(). Returns true if this call decided it.
  bool terminate_with(R value);

  /// True once the outcome is decided (terminate_with, or an exception):
  /// a long job may poll it and return early; its result is discarded.
  [[nodiscard]] bool stop_requested() const noexcept { return group_.is_cancelled(); }

  /// The pool the jobs run on.
  [[nodiscard]] pool& owner() const noexcept { return group_.owner(); }

 private:
  friend struct detail::collect_access;
  template <class F>
  struct call;

  explicit collector(pool& p) noexcept : group_(p) {}

  // The first exception decides the outcome; later ones go to the pool.
  void fail(std::exception_ptr e) noexcept {
    {
      const std::lock_guard lock{mutex_};
      if (!decided_) {
        error_ = std::move(e);
        decided_ = true;
        group_.cancel();
        return;
      }
      // The deciding exception itself, rethrown by the caller of a spawn
      // that failed: already on its way out of collect().
      if (e == error_) return;
    }
    detail::scheduler::report_error(group_.owner(), std::move(e));
  }

  // After every job has finished: the outcome.
  std::vector<R> finish() {
    const std::lock_guard lock{mutex_};
    if (error_) std::rethrow_exception(error_);
    std::vector<R> out;
    if (terminated_) {
      out.push_back(std::move(*terminated_));
      return out;
    }
    out.reserve(slots_.size());
    for (std::optional<R>& slot : slots_) {
      // Without a decision no job was skipped, and every spawn succeeded.
      assert(slot.has_value());
      out.push_back(std::move(*slot));  // NOLINT(bugprone-unchecked-optional-access)
    }
    return out;
  }

  task_group group_;
  std::mutex mutex_;
  // One place per spawned job, in spawn order: a deque, so that adding
  // places never moves the ones jobs are writing. Guarded by mutex_, except
  // each place's value, which only its job writes.
  std::deque<std::optional<R>> slots_;
  bool decided_ = false;         // guarded by mutex_
  std::optional<R> terminated_;  // guarded by mutex_
  std::exception_ptr error_;     // guarded by mutex_
};

// collector<R> for an R that collect cannot return (void, a reference, a
// type that cannot be moved): the reason as the first error and the only
// one, with the members a body calls declared so that they add none.
template <class R>
requires(!detail::collect_result<R>) class collector<R> {
  static_assert(!std::is_void_v<R>,
                "weft::collect<void>: there are no results to collect; use weft::task_group "
                "(spawn, cancel, wait) for jobs without results");
  static_assert(std::is_void_v<R> || detail::collect_result<R>,
                "weft::collect<R>: R must be a move-constructible value type (the results are "
                "moved into the returned std::vector<R>)");

 public:
  template <class F>
  void spawn(F&& f);
  template <class V>
  bool terminate_with(V&& value);
  [[nodiscard]] bool stop_requested() const noexcept;
  [[nodiscard]] pool& owner() const noexcept;
};

// A job's callable: runs f and fills its place, unless the outcome is
// decided before it starts.
template <class R>
template <class F>
struct collector<R>::call {
  template <class G>
  call(collector* c, std::optional<R>* s, G&& g) : owner(c), slot(s), fn(std::forward<G>(g)) {}

  void operator()() noexcept {
    if (owner->stop_requested()) return;
    try {
      if constexpr (std::is_invocable_v<F&, collector&>) {
        slot->emplace(std::invoke(fn, *owner));
      } else {
        slot->emplace(std::invoke(fn));
      }
    } catch (...) {
      owner->fail(std::current_exception());
    }
  }

  collector* owner;
  std::optional<R>* slot;
  F fn;
};

template <class R>
template <class F>
void collector<R>::spawn(F&& f) {
  using D = std::decay_t<F>;
  static_assert(std::is_invocable_v<D&, collector&> || std::is_invocable_v<D&>,
                "weft::collector<R>::spawn(f): f must be callable with a weft::collector<R>& "
                "or with no arguments");
  if constexpr (std::is_invocable_v<D&, collector&>) {
    static_assert(std::is_constructible_v<R, std::invoke_result_t<D&, collector&>>,
                  "weft::collector<R>::spawn(f): f's result must convert to R");
  } else if constexpr (std::is_invocable_v<D&>) {
    static_assert(std::is_constructible_v<R, std::invoke_result_t<D&>>,
                  "weft::collector<R>::spawn(f): f's result must convert to R");
  }
  if (stop_requested()) return;
  std::optional<R>* slot = nullptr;
  {
    const std::lock_guard lock{mutex_};
    slot = &slots_.emplace_back();
  }
  try {
    group_.spawn(call<D>{this, slot, std::forward<F>(f)});
  } catch (...) {
    fail(std::current_exception());
    throw;
  }
}

template <class R>
bool collector<R>::terminate_with(R value) {
  const std::lock_guard lock{mutex_};
  if (decided_) return false;
  terminated_.emplace(std::move(value));
  decided_ = true;
  group_.cancel();
  return true;
}

namespace detail {

// collect() makes and finishes collectors; nobody else may.
struct collect_access {
  template <class R, class Body>
  static std::vector<R> run(pool& p, Body& body) {
    collector<R> c{p};
    try {
      std::invoke(body, c);
    } catch (...) {
      c.fail(std::current_exception());
    }
    // Every job catches its own exception, so the group has none to
    // rethrow; on a worker this runs other jobs meanwhile.
    c.group_.wait();
    return c.finish();
  }
};

}  // namespace detail

/// Calls body(collector) on the calling thread, then waits for every job
/// spawned into the collector (by the body, or by jobs, into any depth) and
/// returns their results in spawn order: the Haskell scheduler's
/// withScheduler. If a job, the body or a spawn calls terminate_with(v)
/// first, returns {v}; if an exception comes first, rethrows it (see
/// weft::collector for what is skipped and where later exceptions go). Every
/// job that started has finished when it returns or throws. Called from a
/// job of p it waits by running other jobs, so collect nests freely; on a
/// sequential pool (threads = 0) the jobs run in spawn order once the body
/// has returned. R is explicit: weft::collect<int>(pool, body).
template <class R, class Body>
requires detail::collect_result<R> && std::is_invocable_v < Body&, collector<R>
& > std::vector<R> collect(pool& p, Body&& body) { return detail::collect_access::run<R>(p, body); }

// What a call collect() does not accept selects instead: the reason as the
// first error and the only one (the return type is deduced, so that
// `auto r = weft::collect<R>(...)` reports it first too).
/// \cond
template <class R, class Body>
auto collect(pool&, Body&&) {
  if constexpr (!detail::collect_result<R>) {
    // collector<R>'s static_asserts say why (unless the body's parameter
    // did already).
    static_cast<void>(sizeof(collector<R>));
  } else {
    static_assert(std::is_invocable_v<Body&, collector<R>&>,
                  "weft::collect<R>(pool, body): body must be callable with a "
                  "weft::collector<R>& (where it spawns the jobs)");
  }
  return detail::no_results{};
}
/// \endcond

}  // namespace weft
