// weft::flow: sequential task flow. Tasks are emplaced in program order, each
// declaring the objects it reads and writes; the flow runs them in parallel
// wherever that gives the same result as running them in order, on the same
// pool and job type as every other front end. docs/flow.md has the modes,
// the edges each creates, the window, exceptions and the machinery.
#pragma once
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "detail/flow_core.hpp"
#include "detail/job.hpp"
#include "detail/latch.hpp"
#include "detail/scheduler.hpp"
#include "errors.hpp"
#include "flow_options.hpp"  // IWYU pragma: export
#include "future.hpp"
#include "graph.hpp"  // run_cancelled
#include "pool.hpp"

namespace weft {

class flow;
class flow_task;
namespace detail {
class coro_flow_awaiter;  // co_await of a flow_task in a weft::coro
}  // namespace detail

// ---------------------------------------------------------------------------
// Access declarations: weft::read(x), write(x), commute(x), concurrent(x),
// reduce(x, op), after(future or flow_task).

/// What read(x), write(x), commute(x) and concurrent(x) return, for flow::emplace.
template <class T, access_mode M>
struct access {
  static_assert(M != access_mode::reduce, "use weft::reduce(x, op)");
  using object_type = T;                  ///< x's type (const for read)
  static constexpr access_mode mode = M;  ///< how the task uses x
  T* object;                              ///< x
};

/// What reduce(x, op) returns, for flow::emplace.
template <class T, class Op>
struct reduce_access {
  using object_type = T;                                    ///< x's type
  static constexpr access_mode mode = access_mode::reduce;  ///< always reduce
  T* object;                                                ///< x
  Op op;                                                    ///< folds the copies into x
};

/// What after(future or flow_task) returns, for flow::emplace.
struct after_access {
  detail::access_desc desc;  ///< the edge, as emplace reads it
};

/// After the previous writer of x; readers run concurrently with each other.
/// The task receives `const T&`.
template <class T>
[[nodiscard]] access<const T, access_mode::read> read(const T& x) noexcept {
  return {&x};
}
/// After every earlier access to x; exclusive. The task receives `T&`.
template <class T>
[[nodiscard]] access<T, access_mode::write> write(T& x) noexcept {
  static_assert(!std::is_const_v<T>, "weft::write needs a non-const object");
  return {&x};
}
/// Consecutive commute tasks on x run one at a time, in any order.
template <class T>
[[nodiscard]] access<T, access_mode::commute> commute(T& x) noexcept {
  static_assert(!std::is_const_v<T>, "weft::commute needs a non-const object");
  return {&x};
}
/// Consecutive concurrent tasks on x may run at the same time (the tasks
/// synchronise among themselves); ordered against every other mode.
template <class T>
[[nodiscard]] access<T, access_mode::concurrent> concurrent(T& x) noexcept {
  static_assert(!std::is_const_v<T>, "weft::concurrent needs a non-const object");
  return {&x};
}
/// The task receives a private, value-initialised T (one per worker); before
/// the next other access to x, or wait(), the copies are folded into x as
/// x = op(x, copy), in worker order.
template <class T, class Op>
[[nodiscard]] reduce_access<T, std::decay_t<Op>> reduce(T& x, Op&& op) {
  static_assert(!std::is_const_v<T>, "weft::reduce needs a non-const object");
  static_assert(std::is_invocable_r_v<T, std::decay_t<Op>&, T, T>,
                "weft::reduce(x, op): op(T, T) must return a T, e.g. std::plus<>{}");
  return {&x, std::forward<Op>(op)};
}
/// An ordering edge: the task runs after the future is ready (its value or
/// exception is not looked at, nor passed). The future must stay valid
/// during emplace.
template <class R>
[[nodiscard]] after_access after(const future<R>& f);
/// An ordering edge: the task runs after an earlier task of the same flow.
[[nodiscard]] after_access after(const flow_task& t);

namespace detail {

template <class A>
struct is_access : std::false_type {};
template <class T, access_mode M>
struct is_access<access<T, M>> : std::true_type {};
template <class T, class Op>
struct is_access<reduce_access<T, Op>> : std::true_type {};
template <>
struct is_access<after_access> : std::true_type {};

// What a declared access hands the callable, resolved when the task runs.
template <class T, access_mode M>
struct bound_object {
  T* object;
  T& get(flow_core&) const noexcept { return *object; }
};
template <class T, class Op>
struct bound_reduction {
  T* object;
  reduction_base* red = nullptr;  // filled by flow_core::submit
};

template <class A>
auto bind_access(const A& a) {
  if constexpr (std::is_same_v<A, after_access>) {
    return std::tuple<>{};
  } else if constexpr (A::mode == access_mode::reduce) {
    return std::tuple<bound_reduction<typename A::object_type, decltype(a.op)>>{
        {a.object, nullptr}};
  } else {
    return std::tuple<bound_object<typename A::object_type, A::mode>>{{a.object}};
  }
}

template <class T, class Op>
reduction_base* make_reduction(void* object, const void* op, std::size_t workers) {
  return new reduction<T, Op>(static_cast<T*>(object), *static_cast<const Op*>(op), workers);
}

template <class A>
access_desc describe(const A& a) {
  if constexpr (std::is_same_v<A, after_access>) {
    return a.desc;
  } else {
    access_desc d;
    d.object = static_cast<const void*>(a.object);
    d.mode = A::mode;
    if constexpr (A::mode == access_mode::reduce) {
      d.make_reduction = &make_reduction<typename A::object_type, decltype(a.op)>;
      d.op = &a.op;
    }
    return d;
  }
}
}  // namespace detail

/// A handle to an emplaced task: two words, freely copied. It names the task
/// for dump(), after(t) orders a later task after it, and inside a
/// weft::coro `co_await t` suspends the coroutine until the task has
/// finished (docs/coroutines.md). It stays usable after the task has
/// finished (after() then adds no edge, co_await does not suspend).
class flow_task {
 public:
  flow_task() noexcept = default;
  /// Names the task in dump() output (kept only with flow_options::keep_graph)
  /// and, on a traced pool, in the trace if the task has not finished yet
  /// (docs/tracing.md).
  flow_task name(std::string_view name) const;
  /// True for a default-constructed handle.
  [[nodiscard]] bool empty() const noexcept { return node_ == nullptr; }

 private:
  friend class flow;
  friend class detail::coro_flow_awaiter;
  friend after_access after(const flow_task& t);
  flow_task(detail::flow_node* n, std::uint32_t generation) noexcept
      : node_(n), generation_(generation) {}
  detail::flow_node* node_ = nullptr;
  std::uint32_t generation_ = 0;
};

/// A sequential task flow on a pool. One thread emplaces (the program order
/// is that thread's order) and waits; tasks start as soon as they are ready.
class flow {
 public:
  /// An empty flow whose tasks run on p.
  explicit flow(pool& p, flow_options options = {});
  ~flow();  ///< waits for the tasks emplaced so far; exceptions left unread go to the pool
  /// Takes other's tasks; other may then only be destroyed (else usage_error).
  flow(flow&& other) noexcept = default;
  flow& operator=(flow&&) = delete;
  flow(const flow&) = delete;
  flow& operator=(const flow&) = delete;

  /// Adds a task that calls f with the declared objects, in declaration
  /// order: `const T&` for read, `T&` for the other modes (a private copy
  /// for reduce); after() passes nothing.
  template <class F, class... A>
  flow_task emplace(F&& f, A&&... accesses);

  /// Returns once every task emplaced so far has finished, then rethrows the
  /// first exception a task threw (or run_cancelled after cancel()); the flow
  /// is usable again afterwards. On a worker it runs other jobs meanwhile.
  void wait();
  /// Returns once every task emplaced so far that accesses x has finished;
  /// the waiting thread runs only tasks x's result depends on. Does not
  /// rethrow (wait() does).
  template <class T>
  void wait(const T& x) {
    core().wait_for_object(static_cast<const void*>(&x));
  }
  /// Skips every task that has not started yet; wait() then throws
  /// run_cancelled. Returns false if nothing was unfinished.
  bool cancel() noexcept;
  /// GraphViz DOT of the tasks emplaced since the last wait(): edges are
  /// labelled with the object and mode that caused them. Needs
  /// flow_options::keep_graph (else usage_error).
  void dump(std::ostream& out) const;

  /// The pool the tasks run on.
  [[nodiscard]] pool& owner() const { return core().owner(); }

 private:
  detail::flow_core& core() const;
  std::unique_ptr<detail::flow_core> core_;
};

// ---------------------------------------------------------------------------

template <class R>
after_access after(const future<R>& f) {
  if (!f.valid()) {
    throw usage_error(
        "weft::after: the future is empty (default-constructed, moved from, or already "
        "read by get()); pass a future that is still valid");
  }
  after_access a;
  a.desc.is_after = true;
  a.desc.after_latch = &detail::future_access::state(f)->done;
  return a;
}

namespace detail {

std::optional<std::size_t> flow_worker_index(const flow_core& core) noexcept;

template <class F, class Bound>
struct flow_closure {
  F fn;
  Bound bound;

  static void call(flow_node* n) {
    auto& self = flow_callable<flow_closure>(n);
    std::apply([&](auto&... b) { self.invoke(*n->owner, b...); }, self.bound);
  }

  template <class... B>
  void invoke(flow_core& core, B&... b) {
    constexpr bool reduces = (is_reduction<B>::value || ...);
    if constexpr (reduces) {
      const std::optional<std::size_t> worker = flow_worker_index(core);
      if (!worker) {
        // Threads that are not workers share one private copy.
        const std::lock_guard lock{core.guest_mutex()};
        std::invoke(fn, resolve(worker, b)...);
        return;
      }
      std::invoke(fn, resolve(worker, b)...);
    } else {
      std::invoke(fn, resolve(std::nullopt, b)...);
    }
  }

  template <class B>
  struct is_reduction : std::false_type {};
  template <class T, class Op>
  struct is_reduction<bound_reduction<T, Op>> : std::true_type {};

  template <class T, access_mode M>
  static T& resolve(std::optional<std::size_t>, bound_object<T, M>& b) noexcept {
    return *b.object;
  }
  template <class T, class Op>
  static T& resolve(std::optional<std::size_t> worker, bound_reduction<T, Op>& b) {
    return static_cast<reduction<T, Op>*>(b.red)->local(worker);
  }
};

template <class B>
struct bound_arg;
template <class T, access_mode M>
struct bound_arg<bound_object<T, M>> {
  using type = T&;
};
template <class T, class Op>
struct bound_arg<bound_reduction<T, Op>> {
  using type = T&;
};
template <class F, class Bound>
struct invocable_with_bound;
template <class F, class... B>
struct invocable_with_bound<F, std::tuple<B...>>
    : std::is_invocable<F&, typename bound_arg<B>::type...> {};

template <class... A>
using bound_tuple_t = decltype(std::tuple_cat(bind_access(std::declval<const A&>())...));

// Fills the descriptions' reduce bindings with the addresses of the bound
// reductions in the stored closure, in declaration order.
template <class Bound>
void bind_reductions(Bound& bound, access_desc* descs, std::size_t count) {
  std::size_t next = 0;
  auto bind_one = [&](auto& b) {
    using B = std::decay_t<decltype(b)>;
    if constexpr (requires { b.red; }) {
      while (next < count && descs[next].mode != access_mode::reduce) ++next;
      descs[next].bind = &b.red;
      ++next;
    }
    (void)sizeof(B);
  };
  std::apply([&](auto&... b) { (bind_one(b), ...); }, bound);
}

}  // namespace detail

template <class F, class... A>
flow_task flow::emplace(F&& f, A&&... accesses) {
  static_assert((detail::is_access<std::decay_t<A>>::value && ...),
                "weft::flow::emplace(f, accesses...): declare each object with weft::read, "
                "write, commute, concurrent, reduce or after");
  using Bound = detail::bound_tuple_t<std::decay_t<A>...>;
  using C = detail::flow_closure<std::decay_t<F>, Bound>;
  static_assert(detail::invocable_with_bound<std::decay_t<F>, Bound>::value,
                "weft::flow::emplace(f, accesses...): f must be callable with the declared "
                "objects in order: const T& for read(x), T& for the other modes; after() "
                "passes nothing");
  detail::flow_core& c = core();
  std::array<detail::access_desc, sizeof...(A) + 1> descs{detail::describe(accesses)...};
  detail::flow_node* n = c.allocate();
  try {
    Bound bound = std::tuple_cat(detail::bind_access(accesses)...);
    if constexpr (detail::flow_inline_v<C>()) {
      ::new (static_cast<void*>(n->storage)) C{std::forward<F>(f), std::move(bound)};
    } else {
      ::new (static_cast<void*>(n->storage)) C*(new C{std::forward<F>(f), std::move(bound)});
    }
  } catch (...) {
    c.unallocate(n);
    throw;
  }
  n->call = &C::call;
  n->destroy = std::is_trivially_destructible_v<C> && detail::flow_inline_v<C>()
                   ? nullptr
                   : &detail::destroy_flow_callable<C>;
  detail::bind_reductions(detail::flow_callable<C>(n).bound, descs.data(), sizeof...(A));
  const std::uint32_t generation = n->generation;
  c.submit(n, descs.data(), sizeof...(A));
  return flow_task{n, generation};
}

}  // namespace weft
