// weft::scope, weft::submit_scoped and weft::spawn_scoped: a job that
// finishes with the jobs it attaches (LibZ.Jobs' finishWith). The job and
// its attachments count themselves off one counter; the last to finish
// completes the future, so no thread waits for the attachments
// (docs/collect.md).
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

#include "detail/scheduler.hpp"
#include "errors.hpp"
#include "future.hpp"
#include "pool.hpp"

namespace weft {

namespace detail {
template <class R>
struct scope_state;
template <class R, class F>
struct scope_root;
}  // namespace detail

/// The jobs a scoped job (submit_scoped, spawn_scoped) finishes with. The
/// scoped job receives it as a `weft::scope&` and may spawn() attachments
/// into it, which may attach more in turn; the scoped job's future is ready
/// once the job and every attachment have finished. The scope lives as long
/// as any of them runs, so an attachment may also capture it by reference.
/// The first exception of the job or of an attachment goes to the future
/// and skips the attachments that have not started; every later one goes to
/// the pool's error path (pool_options::on_error, or pool::wait()).
class scope {
 public:
  scope(const scope&) = delete;
  scope& operator=(const scope&) = delete;
  scope(scope&&) = delete;
  scope& operator=(scope&&) = delete;

  /// Attaches g: runs g(scope&) if g takes the scope, else g(), as a job of
  /// the scope's pool; its result, if any, is discarded. Call it from the
  /// scoped job or from an attachment while it runs (or from a thread that
  /// one of them waits for before returning). Throws usage_error once the
  /// scope has finished (when that can still be seen), and as pool::spawn
  /// does (std::bad_alloc; the attachment is then not counted).
  template <class G>
  void spawn(G&& g);

  /// The pool the scope's jobs run on.
  [[nodiscard]] pool& owner() const noexcept { return *pool_; }

 private:
  template <class R>
  friend struct detail::scope_state;
  template <class R, class F>
  friend struct detail::scope_root;
  template <class G>
  struct attached;

  using complete_fn = void (*)(scope&) noexcept;
  scope(pool& p, complete_fn complete) noexcept : pool_(&p), complete_(complete) {}
  ~scope() = default;

  // One job of the scope has finished (after its callable was destroyed);
  // the last one completes the scope.
  void arrive() noexcept {
    // acq_rel: the release half publishes this job's writes (the result,
    // error_) to the last arrival, whose acquire half pairs with every
    // earlier release, so complete_ sees them all.
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) complete_(*this);
  }

  // A job of the scope threw: the first exception is kept for the future,
  // any later one goes to the pool's error path.
  void fail(std::exception_ptr e) noexcept {
    // Relaxed: failed_ only decides who writes error_, and skips work; the
    // winner's write reaches complete_ through its arrive() (acq_rel).
    if (!failed_.exchange(true, std::memory_order_relaxed)) {
      error_ = std::move(e);
      return;
    }
    detail::scheduler::report_error(*pool_, std::move(e));
  }

  [[nodiscard]] bool failed() const noexcept {
    // Relaxed: a hint to skip attachments that have not started.
    return failed_.load(std::memory_order_relaxed);
  }

  pool* pool_;
  complete_fn complete_;
  // The jobs of the scope not finished yet: the scoped job and its
  // attachments. Zero once the scope has completed.
  std::atomic<std::size_t> pending_{1};
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;  // written once, by the first job to fail
};

// An attachment's callable, run by pool::spawn's job.
template <class G>
struct scope::attached {
  // The scope counts on every attachment finishing: pool::purge() keeps it.
  using weft_keep_on_purge = void;
  template <class H>
  attached(scope* s, H&& h) : owner(s) {
    fn.emplace(std::forward<H>(h));
  }

  void operator()() noexcept {
    if (!owner->failed()) {
      try {
        // NOLINTBEGIN(bugprone-unchecked-optional-access): engaged until reset below
        if constexpr (std::is_invocable_v<G&, scope&>) {
          static_cast<void>(std::invoke(*fn, *owner));
        } else {
          static_cast<void>(std::invoke(*fn));
        }
        // NOLINTEND(bugprone-unchecked-optional-access)
      } catch (...) {
        owner->fail(std::current_exception());
      }
    }
    // The callable and its captures go before the scope can complete, so
    // they never outlive the future's get().
    fn.reset();
    owner->arrive();
  }

  scope* owner;
  std::optional<G> fn;
};

template <class G>
void scope::spawn(G&& g) {
  using D = std::decay_t<G>;
  static_assert(std::is_invocable_v<D&, scope&> || std::is_invocable_v<D&>,
                "weft::scope::spawn(g): g must be callable with a weft::scope& or with no "
                "arguments");
  if constexpr (std::is_invocable_v<D&, scope&> || std::is_invocable_v<D&>) {
    std::size_t n = pending_.load(std::memory_order_relaxed);
    do {
      if (n == 0) {
        throw usage_error(
            "weft::scope::spawn: the scope has finished (its job and all its attachments "
            "returned); attach jobs only from the scoped job or an attachment while it runs");
      }
      // Relaxed: the caller is one of the scope's jobs, whose own count
      // keeps pending_ above zero; the attachment reaches the pool through
      // pool::spawn's push, which publishes everything it needs.
    } while (!pending_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
    try {
      pool_->spawn(attached<D>{this, std::forward<G>(g)});
    } catch (...) {
      arrive();
      throw;
    }
  }
}

namespace detail {

// A scoped job's state: the future's, and the scope its jobs share. Freed by
// whoever lets go last: the future, or the scope's last job.
template <class R>
struct scope_state final : future_state<R>, scope {
  scope_state(pool& p, bool with_future) noexcept : scope(p, &complete) {
    this->run = nullptr;  // never queued itself: pool::spawn runs its jobs
    future_state<R>::owner = &p;
    future_state<R>::owner_life = scheduler::life(p);
    this->destroy = &destroy_state;
    // The jobs' side, and the future's unless there is none (spawn_scoped).
    if (!with_future) this->refs.store(1, std::memory_order_relaxed);
  }

  // On the thread of the scope's last job, which is still counted by the
  // pool: the pool is alive.
  static void complete(scope& s) noexcept {
    auto& self = static_cast<scope_state&>(s);
    pool* const p = self.pool_;
    if (self.error_) {
      self.error = std::move(self.error_);
      self.value.reset();
    }
    // As future_job::run_job: once the latch is set the future may take
    // the outcome and go; the last owner frees the state. Without a future
    // (or with one dropped unread) the exception goes to the pool.
    self.done.set();
    if (self.drop()) {
      if (self.error) scheduler::report_error(*p, self.error);
      destroy_state(&self);
    }
  }

  static void destroy_state(future_state<R>* s) noexcept { delete static_cast<scope_state*>(s); }
};

// The scoped job's callable: f(scope&), its result kept in the state (or
// discarded when R is void).
template <class R, class F>
struct scope_root {
  // The scope counts on its root finishing: pool::purge() keeps it.
  using weft_keep_on_purge = void;
  template <class G>
  scope_root(scope_state<R>* s, G&& g) : state(s) {
    fn.emplace(std::forward<G>(g));
  }

  void operator()() noexcept {
    scope& s = *state;
    try {
      // NOLINTBEGIN(bugprone-unchecked-optional-access): engaged until reset below
      if constexpr (std::is_void_v<R>) {
        static_cast<void>(std::invoke(*fn, s));
        state->value.emplace();
      } else {
        state->value.emplace(std::invoke(*fn, s));
      }
      // NOLINTEND(bugprone-unchecked-optional-access)
    } catch (...) {
      s.fail(std::current_exception());
    }
    fn.reset();
    s.arrive();
  }

  scope_state<R>* state;
  std::optional<F> fn;
};

}  // namespace detail

/// What a scoped job f returns: f(scope&)'s result.
template <class F>
using scoped_result_t = detail::call_result_t<std::decay_t<F>&, scope&>;

/// Runs f(scope&) as a job of p (LibZ.Jobs' finishWith): f may attach
/// further jobs with scope.spawn(g), and those may attach more. The future
/// holds f's result, and is ready only when f and every attachment have
/// finished; no thread waits for them meanwhile (the last job to finish
/// completes the future). If f or an attachment throws, the attachments
/// not yet started are skipped and the future holds the first exception;
/// later ones go to the pool's error path. Throws as pool::submit does.
template <class F>
[[nodiscard]] future<scoped_result_t<F>> submit_scoped(pool& p, F&& f) {
  using D = std::decay_t<F>;
  static_assert(std::is_invocable_v<D&, scope&>,
                "weft::submit_scoped(pool, f): f must be callable with a weft::scope& (where it "
                "attaches jobs); for a job without attachments use pool.submit(f)");
  using R = scoped_result_t<F>;
  static_assert(!std::is_reference_v<R>,
                "weft::submit_scoped(pool, f): f must return a value, not a reference (a future "
                "holds its value)");
  if constexpr (std::is_invocable_v<D&, scope&> && !std::is_reference_v<R>) {
    auto* state = new detail::scope_state<R>(p, true);
    try {
      p.spawn(detail::scope_root<R, D>{state, std::forward<F>(f)});
    } catch (...) {
      delete state;
      throw;
    }
    // Two references from the start (the jobs and this future), so the
    // state outlives the jobs even if they finish before this line.
    return detail::future_access::make<R>(state);
  } else {
    return {};
  }
}

/// submit_scoped without a future: f's result is discarded, and every
/// exception of f or of an attachment goes to the pool's error path
/// (pool_options::on_error, or pool::wait()); the first one still skips the
/// attachments not yet started. pool::wait() returns only once f and all
/// attachments have finished. Throws as pool::spawn does.
template <class F>
void spawn_scoped(pool& p, F&& f) {
  using D = std::decay_t<F>;
  static_assert(std::is_invocable_v<D&, scope&>,
                "weft::spawn_scoped(pool, f): f must be callable with a weft::scope& (where it "
                "attaches jobs); for a job without attachments use pool.spawn(f)");
  if constexpr (std::is_invocable_v<D&, scope&>) {
    auto* state = new detail::scope_state<void>(p, false);
    try {
      p.spawn(detail::scope_root<void, D>{state, std::forward<F>(f)});
    } catch (...) {
      delete state;
      throw;
    }
  }
}

}  // namespace weft
