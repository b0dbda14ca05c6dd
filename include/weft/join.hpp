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

// One side of a join, living in the joining thread's stack frame.
template <class F>
struct join_half : job {
  using result = result_t<std::invoke_result_t<F&>>;

  explicit join_half(F& f) noexcept : fn(&f) { run = &run_stolen; }

  void invoke() noexcept {
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

  // Run by whoever took this half from a queue; the joining thread may return
  // (and this object vanish) as soon as done is set.
  static void run_stolen(job* base) noexcept {
    auto* self = static_cast<join_half*>(base);
    self->invoke();
    self->done.set();
  }

  F* fn;
  std::optional<result> value;
  std::exception_ptr error;
  latch done;
};

struct join_access {
  template <class F, class G>
  static auto run(pool& p, F& f, G& g) {
    join_half<F> left{f};
    join_half<G> right{g};
    context& ctx = tls;
    if (p.sequential()) {
      left.invoke();
      right.invoke();
    } else if (ctx.owner == &p) {
      worker* self = ctx.self;
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
        p.execute(j);
      }
    } else {
      p.injector_.push(&right);
      p.sleep_.new_work();
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
};

}  // namespace detail

// Runs f() and g(), possibly in parallel, and returns {f(), g()} (a void
// result becomes std::monostate). On a worker it uses that worker's pool and
// allocates nothing; elsewhere it uses weft::default_pool() (g() goes through
// the injector, f() runs on the calling thread). If either throws, the
// exception is rethrown once both have finished (f's first if both throw).
template <class F, class G>
auto join(F&& f, G&& g) {
  pool* owner = detail::tls.owner;
  return detail::join_access::run(owner != nullptr ? *owner : default_pool(), f, g);
}

}  // namespace weft
