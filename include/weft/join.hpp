// weft::join: run two callables, possibly in parallel, and return both results.
#pragma once

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "detail/context.hpp"
#include "detail/job.hpp"
#include "detail/latch.hpp"
#include "future.hpp"
#include "pool.hpp"

namespace weft {

namespace detail {

template <class F>
struct join_half;
template <class G>
struct stealable_half;

struct join_access {
  template <class F, class G>
  static auto run(pool& p, F& f, G& g);
  // A half forked from outside the pool has finished.
  static void count_finished(pool& p, job_cache& c, unsigned epoch) noexcept {
    p.count_finished(c, epoch, 1);
  }
  // The epoch parity of a half a worker of p forked under `scope`.
  static unsigned epoch_of(const pool& p, const running_scope* scope) noexcept {
    unsigned epoch = 0;
    if (!running_scope::find(scope, &p, epoch)) epoch = p.spawn_epoch();
    return epoch;
  }
};

// One side of a join, living in the joining thread's stack frame.
template <class F>
struct join_half {
  using result = result_t<std::invoke_result_t<F&>>;

  explicit join_half(F& f) noexcept : fn(&f) {}

  // Always inline: it is the whole fork-join fast path, and GCC stopped
  // inlining it into join_access::run() when the job header grew.
  [[gnu::always_inline]] void invoke() noexcept {
    try {
      if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
        (*fn)();
        value.emplace();
      } else {
        value.emplace((*fn)());
      }
    } catch (...) {
      error = std::current_exception();
    }
  }

  F* fn;
  std::optional<result> value;
  std::exception_ptr error;
};

// The second half, which another thread may take from a queue and run. The
// fields below are written only by the path that queues it, just before.
template <class G>
struct stealable_half : job, join_half<G> {
  explicit stealable_half(G& g) noexcept : join_half<G>(g) { this->run = &run_stolen; }

  // Run by whoever took this half from a queue; the joining thread may return
  // (and this object vanish) as soon as done is set.
  static void run_stolen(job* base) noexcept {
    auto* self = static_cast<stealable_half*>(base);
    pool* const forked_in = self->forked_in;
    job_cache* const counted = self->counted;
    // The half belongs to the job that forked it: jobs it spawns count in
    // that job's epoch.
    const unsigned epoch = self->epoch;
    {
      const running_scope running{forked_in, epoch};
      self->invoke();
    }
    self->done.set();
    // A half pushed by a thread that is not a worker is a job of its own.
    // Last: the pool may be destroyed once it counts as finished.
    if (counted != nullptr) join_access::count_finished(*forked_in, *counted, epoch);
  }

  latch done;
  pool* forked_in;     // the pool it was queued in
  unsigned epoch;      // the forking job's epoch parity
  job_cache* counted;  // an outside fork: counted as a job of its own, here
};

template <class F, class G>
auto join_access::run(pool& p, F& f, G& g) {
  join_half<F> left{f};
  stealable_half<G> right{g};
  context& ctx = tls;
  if (p.sequential()) {
    left.invoke();
    right.invoke();
  } else if (ctx.owner == &p) {
    worker* self = ctx.self;
    right.forked_in = &p;
    // The joiner's innermost job is almost always one of p's (then this is
    // two loads from our own stack); a thief must not walk our scopes.
    const running_scope* inner = ctx.running;
    right.epoch =
        inner != nullptr && inner->owner() == &p ? inner->epoch() : join_access::epoch_of(p, inner);
    right.counted = nullptr;
    self->deque.push(&right);
    p.sleep_.new_work();
    left.invoke();
    // Take the right half back unless it was stolen. Jobs that f spawned and
    // left on top of it are ours to run meanwhile.
    for (;;) {
      job* j = self->deque.pop();
      if (j == &right) {
        right.invoke();
        break;
      }
      if (j == nullptr) {
        auto stolen_done = [&right] { return right.done.is_set(); };
        p.help_until(stolen_done);
        break;
      }
      detail::worker::bump(self->counts.jobs);
      p.execute(j);
    }
  } else {
    // From outside the pool the right half is a job of its own: counted,
    // so that the pool is not destroyed (or its wait() satisfied) with it
    // queued, and pushed as any outside submission.
    const pool::ticket t = p.count_spawn();
    const pool::submission_guard guard{p, t};  // destroyed last
    right.forked_in = &p;
    right.epoch = t.epoch;
    right.counted = t.cache;
    try {
      p.push(&right);
    } catch (...) {
      p.count_finished(*t.cache, t.epoch, 1);
      throw;
    }
    left.invoke();
    p.await(right.done);
  }
  if (left.error) std::rethrow_exception(left.error);
  if (right.error) std::rethrow_exception(right.error);
  // Each half engages value whenever it leaves error empty.
  // NOLINTBEGIN(bugprone-unchecked-optional-access)
  return std::pair<typename join_half<F>::result, typename join_half<G>::result>{
      std::move(*left.value), std::move(*right.value)};
  // NOLINTEND(bugprone-unchecked-optional-access)
}

}  // namespace detail

/// Runs f() and g(), possibly in parallel, and returns {f(), g()} (a void
/// result becomes std::monostate). On a worker it uses that worker's pool and
/// allocates nothing. In a job that a waiting outside thread runs as a pool's
/// helper (this_worker::index() == max_size()) it uses that pool; elsewhere it
/// uses weft::default_pool(). Off a worker, g() is submitted as a job and f()
/// runs on the calling thread. If either throws, the exception is rethrown
/// once both have finished (f's first if both throw).
template <class F, class G>
auto join(F&& f, G&& g) {
  const detail::context& ctx = detail::tls;
  pool* owner = ctx.owner != nullptr ? ctx.owner : ctx.helping;
  return detail::join_access::run(owner != nullptr ? *owner : default_pool(), f, g);
}

}  // namespace weft
