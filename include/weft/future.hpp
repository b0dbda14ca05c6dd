// weft::future: the result (or the exception) of a job submitted to a pool.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <future>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "detail/clock.hpp"
#include "detail/context.hpp"
#include "detail/job.hpp"
#include "detail/latch.hpp"
#include "errors.hpp"

namespace weft {

class pool;
template <class R>
class future;

namespace detail {

// void results are carried as std::monostate.
template <class R>
using result_t = std::conditional_t<std::is_void_v<R>, std::monostate, R>;

// Prints an exception that nobody will ever see otherwise (a future destroyed
// without get() after its job failed).
void report_unretrieved(const std::exception_ptr& error) noexcept;

// Shared by a submitted job and its future; whoever lets go last destroys it.
template <class R>
struct future_state : job {
  unsigned epoch = 0;  // the epoch parity the job is counted in (first: see job)
  // Drops one reference. The caller that gets true was the last owner: it
  // may still read the state, and must then call destroy(this).
  bool drop() noexcept {
    // A count of 1 is the caller's own reference: the others are gone, and
    // nobody takes a new one without holding one, so the last owner needs
    // no read-modify-write (of a job and its future, whichever lets go
    // second). Acquire pairs with the others' decrements below.
    if (refs.load(std::memory_order_acquire) == 1) return true;
    // acq_rel: the last owner must see everything the other wrote (the
    // result, or the future's reads of it) before destroying the state.
    return refs.fetch_sub(1, std::memory_order_acq_rel) == 1;
  }

  std::atomic<int> refs{2};  // the job and the future
  // The pool's life number (pool::life()), which tells it from a later pool
  // at the same address: once the job has finished, owner may be gone, and
  // only the registry of live pools, asked with both, can tell (then,
  // when_all, when_any: docs/continuations.md). In padding before `done`.
  std::uint32_t owner_life = 0;
  latch done;  // set when value or error is final
  // The pool the job runs on; nullptr for a future made ready without one
  // (when_all of nothing, a continuation run by then() itself).
  pool* owner = nullptr;
  job_cache* counted = nullptr;  // the cache the job is counted against
  void (*destroy)(future_state*) noexcept = nullptr;
  // Set by work that can be stopped as a whole (a graph run): asks it to
  // stop, and returns true if the request came before the work finished.
  bool (*cancel)(future_state*) noexcept = nullptr;
  // Set by work that must know when its future is dropped unread (a graph
  // run, which then reports its exception to the pool). Called by the
  // future before it lets go; returns true if it dealt with the error.
  bool (*dropped)(future_state*) noexcept = nullptr;
  std::optional<result_t<R>> value;
  std::exception_ptr error;
};

// Whether a wait for s on this thread could never end: the thread is running
// the job s belongs to (future_job marks its running_scope with s), or a task
// of the graph whose run s is (src/graph/start.cpp). Walks the thread's running
// jobs: a load per frame, on a wait's slow path only.
bool inside_own_run(const future_state<void>* s) noexcept;
template <class R>
bool waits_for_itself(const future_state<R>* s) noexcept {
  if (running_scope::inside(s)) return true;
  // Only a graph run sets both cancel and dropped (a coroutine's start,
  // weft/coro.hpp, sets only cancel), and its future is a future<void>.
  if constexpr (std::is_void_v<R>) {
    return s->cancel != nullptr && s->dropped != nullptr && inside_own_run(s);
  }
  return false;
}

// What f returns when it continues a future<R> (future::then): f(R&&), or
// f() for void; not_callable when it cannot be called so.
template <class R, class F>
struct then_result {
  using type = call_result_t<F&, R&&>;
};
template <class F>
struct then_result<void, F> {
  using type = call_result_t<F&>;
};
template <class R, class F>
using then_result_t = typename then_result<R, std::decay_t<F>>::type;
template <class>
inline constexpr bool always_false = false;

// Lets other front ends (weft::after) look at a future's state.
struct future_access {
  template <class F>
  static auto* state(const F& f) noexcept {
    return f.state_;
  }
  // A future of s, which the caller hands its reference to.
  template <class R>
  static weft::future<R> make(future_state<R>* s) noexcept {
    return weft::future<R>(s);
  }
};

}  // namespace detail

/// Move-only handle to a submitted job's outcome. Use it from one thread at a
/// time. get() on a worker runs other jobs while it waits; on any other thread
/// it spins briefly, runs its own queued jobs if pool_options::waiters_help
/// is set, and then blocks (in sequential mode it runs the pool's jobs).
/// Destroying a future without get() is fine: if its job throws after that,
/// the exception goes to the pool's error path (pool_options::on_error, or
/// pool::wait()); if the job had already failed, the exception is printed to
/// stderr, since nothing can rethrow it any more.
template <class R>
class future {
 public:
  future() noexcept = default;
  /// Takes other's job; other is left empty.
  future(future&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  /// Lets go of this future's job, as the destructor does, and takes other's.
  future& operator=(future&& other) noexcept {
    if (this != &other) {
      reset();
      state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
  }
  future(const future&) = delete;
  future& operator=(const future&) = delete;
  ~future() { reset(); }

  /// True until get() has been called (or the future was moved from).
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

  /// True once the job has finished (with a value or an exception).
  [[nodiscard]] bool ready() const noexcept { return state_ != nullptr && state_->done.is_set(); }

  /// Asks the work behind this future to stop. For a graph run, tasks that
  /// have not started are skipped and get() throws weft::run_cancelled.
  /// Returns true if the request came before the work finished; false for an
  /// empty future, a finished run, or a submitted job (which cannot be
  /// cancelled).
  bool cancel() noexcept {
    return state_ != nullptr && state_->cancel != nullptr && state_->cancel(state_);
  }

  /// Waits for the job to finish. Throws usage_error on an empty future,
  /// and when called from inside the work it stands for (its own job, or a
  /// task of the graph whose run it is), which could then never finish.
  void wait() const;

  /// Waits at most `timeout` (until `deadline`), as std::future does:
  /// std::future_status::ready once the job has finished, `timeout` if it
  /// has not by then (never `deferred`). The wait is the same as wait()'s:
  /// on a worker it runs other jobs meanwhile and looks at the clock between
  /// them, so a long job it runs can make it return late. Any rep, period
  /// and clock, converted without overflow (docs/waiting.md, "Timed
  /// waits"): a timeout or deadline too far ahead to represent (max(),
  /// +infinity) waits until the job finishes, a zero or negative one, a
  /// past deadline (min(), -infinity) only looks. Throws usage_error on an
  /// empty future, and for a NaN timeout or deadline.
  template <class Rep, class Period>
  std::future_status wait_for(const std::chrono::duration<Rep, Period>& timeout) const {
    return wait_until_steady(detail::deadline_after(timeout, "weft::future::wait_for"));
  }
  /// wait_for() until `deadline`, on any clock. A steady_clock deadline is
  /// used as it is; another clock's is waited for as the same distance from
  /// that clock's now, then re-checked against that clock (which may have
  /// been set meanwhile), as std::future does.
  template <class Clock, class Duration>
  std::future_status wait_until(const std::chrono::time_point<Clock, Duration>& deadline) const {
    constexpr const char* who = "weft::future::wait_until";
    if constexpr (std::is_same_v<Clock, std::chrono::steady_clock>) {
      return wait_until_steady(detail::steady_deadline(deadline, who));
    } else {
      for (;;) {
        const std::future_status s = wait_until_steady(detail::steady_deadline(deadline, who));
        if (s == std::future_status::ready || detail::has_come(deadline)) return s;
      }
    }
  }

  /// Continuation (weft/continuation.hpp): once this future's job has
  /// finished, runs f(value) (f() for void) as a new job of the same pool and
  /// returns its future; if the job threw, f is skipped and the returned
  /// future holds that exception. Consumes this future (call it on an
  /// rvalue: std::move(fut).then(f)); nothing blocks meanwhile, and the
  /// continuation counts as a job of the pool from this call on (pool.wait()
  /// and the pool's destructor wait for it). A future may outlive its pool:
  /// if the job has finished and the pool's destruction has begun (or the
  /// future never had a pool, as when_all of nothing), f runs inside this
  /// call, on the calling thread, and the returned future is ready (with
  /// f's exception, if it threw). Throws usage_error on an empty future;
  /// pool_closed when the job has not finished and the pool's destruction
  /// has begun (unless called from one of the pool's jobs).
  template <class F>
  [[nodiscard]] future<detail::then_result_t<R, F>> then(F&& f) &&;
  /// Not on an lvalue: a compile-time error says to call std::move(fut).then(f).
  template <class F>
  void then(F&& /*f*/) & {
    static_assert(detail::always_false<F>,
                  "weft::future::then consumes the future: call std::move(fut).then(f)");
  }

  /// Waits, then returns the job's result or rethrows its exception. The
  /// future is empty afterwards.
  R get() {
    wait();
    detail::future_state<R>* s = std::exchange(state_, nullptr);
    struct releaser {
      detail::future_state<R>* s;
      ~releaser() {
        if (s->drop()) s->destroy(s);
      }
    } guard{s};
    // Taking the exception out marks it retrieved; drop() orders this
    // against the job's own last look at it.
    if (s->error) std::rethrow_exception(std::exchange(s->error, nullptr));
    if constexpr (!std::is_void_v<R>) {
      // The job engages value whenever it leaves error empty.
      // NOLINTNEXTLINE(bugprone-unchecked-optional-access)
      R result = std::move(*s->value);
      // The moved-from value is destroyed here, on the caller's thread,
      // not by whichever side lets go of the state last.
      s->value.reset();
      return result;
    }
  }

 private:
  friend class pool;
  friend struct detail::future_access;
  explicit future(detail::future_state<R>* s) noexcept : state_(s) {}

  std::future_status wait_until_steady(std::chrono::steady_clock::time_point deadline) const;

  void reset() noexcept {
    detail::future_state<R>* s = std::exchange(state_, nullptr);
    if (s == nullptr) return;
    if (s->dropped != nullptr && s->dropped(s)) {
      if (s->drop()) s->destroy(s);
      return;
    }
    if (!s->drop()) return;
    // Last owner: the job has finished and nobody took its outcome.
    if (s->error) detail::report_unretrieved(s->error);
    s->destroy(s);
  }

  detail::future_state<R>* state_ = nullptr;
};

}  // namespace weft

#include "pool.hpp"  // future<R>::wait() needs the complete pool
