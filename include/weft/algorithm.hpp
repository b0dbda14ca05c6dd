// weft's parallel algorithms: for_each, for_each_index, transform, reduce,
// transform_reduce and map over random-access ranges (docs/algorithms.md).
#pragma once

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <exception>
#include <functional>
#include <iterator>
#include <optional>
#include <ranges>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "detail/scheduler.hpp"
#include "errors.hpp"
#include "join.hpp"
#include "pool.hpp"
#include "this_worker.hpp"

namespace weft {

/// The smallest piece of a range that an algorithm hands to one call of its
/// loop: pieces are split in two only while both halves keep at least `size`
/// elements. Pass it as the last argument, e.g.
/// weft::for_each(pool, v.begin(), v.end(), f, weft::grain{1024}). The
/// default, 1, lets load alone decide (docs/algorithms.md, "Splitting").
struct grain {
  std::size_t size = 1;  ///< the smallest piece, in elements
};

namespace detail::algo {

// The pool whose algorithm code this thread is running, if any: a call made
// from inside an element function on the same pool forks with join at once
// instead of going through a job of its own. Set by every piece of the
// recursion, restored when it returns.
inline thread_local const pool* running_in = nullptr;

class running_in_scope {
 public:
  explicit running_in_scope(const pool& p) noexcept : saved_(running_in) { running_in = &p; }
  running_in_scope(const running_in_scope&) = delete;
  running_in_scope& operator=(const running_in_scope&) = delete;
  ~running_in_scope() { running_in = saved_; }

 private:
  const pool* saved_;
};

// What one call of an algorithm shares among its pieces; lives in the
// calling frame, which waits for every piece.
struct loop_state {
  loop_state(pool& p, std::size_t n, std::size_t g) noexcept
      : owner(p), length(n), grain(g), workers(p.size()) {}

  pool& owner;
  const std::size_t length;  // of the whole range
  const std::size_t grain;
  const std::size_t workers;
  // Set by the first piece that throws; pieces not yet started then skip.
  // Relaxed: only a hint to skip work. The exception itself travels back
  // through the forks (weft::join, or a future in fork()), which order
  // everything the piece did before the forking piece goes on.
  std::atomic<bool> stop{false};
};

// Lazy, adaptive splitting in the style of rayon's adaptive splitter: a
// piece may split while its budget lasts, halving the budget each time; a
// piece that another worker took from the forking one (a steal: there is a
// hungry thread) gets a fresh budget of one split per worker.
class splitter {
 public:
  explicit splitter(std::size_t budget) noexcept : budget_(budget) {}

  // Whether a piece of `len` elements is split now; `stolen`: it runs on a
  // different worker than the one that forked it.
  bool split(std::size_t len, const loop_state& s, bool stolen) noexcept {
    if (len / 2 < s.grain) return false;
    if (stolen) {
      budget_ = std::max(s.workers, budget_ / 2);
      return true;
    }
    if (budget_ == 0) return false;
    budget_ /= 2;
    return true;
  }

 private:
  std::size_t budget_;
};

// Runs left() and right(), possibly in parallel, on p, and returns both
// results as weft::join does (left's exception first if both throw, once
// both have finished). On a thread that runs p's jobs as a worker (or runs
// a sequential p's jobs) that is weft::join. A thread that is no worker can
// only run one of p's jobs when it waits with pool_options::waiters_help;
// join would fork on another pool there (default_pool()), so the right half
// goes to p as a job of its own.
template <class L, class R>
auto fork(pool& p, L& left, R& right) {
  // A public fork: the pieces are few and large, and an idle worker must be
  // able to take the right one while the left runs (weft::join keeps its
  // half private while the deque's public part has work).
  if (this_worker::index().has_value()) return join_access::fork<false>(left, right);
  auto right_done = detail::scheduler::submit_kept(p, right);
  try {
    auto l = left();
    return std::pair{std::move(l), right_done.get()};
  } catch (...) {
    // left threw (or right did, from get(), which emptied the future). As
    // in join, left's exception wins: wait for right and drop its own (a
    // future dropped with an exception in it would print it).
    if (right_done.valid()) {
      try {
        (void)right_done.get();
      } catch (...) {  // NOLINT(bugprone-empty-catch): superseded by left's
      }
    }
    throw;
  }
}

// Whether worker `w` (of s.workers) keeps the right half of a piece split at
// `mid`, and forks the left one: it keeps the half on the side of its own
// share of a static partition, the middle of [w * length / workers, (w + 1)
// * length / workers). So every call of a loop of the same length hands
// each worker the same part of the range, whichever worker took the root
// piece, as OpenMP's static schedule does, and a worker finds in its caches
// the elements it touched in the last call (parallel_loops/balanced_1e7:
// 1.5 against 1.2 ms when the root's worker always kept the left half).
// One worker, or a thread that is not one of them (a helping caller), keeps
// the left half, so that one thread alone runs the elements in index order.
inline bool keeps_right(const loop_state& s, std::optional<std::size_t> w,
                        std::size_t mid) noexcept {
  if (s.workers < 2 || !w.has_value() || *w >= s.workers) return false;
  const std::size_t share = s.length / s.workers;
  return *w * share + share / 2 >= mid;
}

// Runs leaf over [lo, hi), split as the splitter decides, and folds the
// pieces' results with combine(left, right) in index order. Empty when the
// loop was stopped by an exception (which then reaches the caller anyway).
template <class T, class Leaf, class Combine>
std::optional<T> divide(loop_state& s, std::size_t lo, std::size_t hi, splitter sp, bool stolen,
                        Leaf& leaf, Combine& combine) {
  if (s.stop.load(std::memory_order_relaxed)) return std::nullopt;
  try {
    if (!sp.split(hi - lo, s, stolen)) return std::optional<T>{leaf(lo, hi)};
    const std::size_t mid = lo + (hi - lo) / 2;
    const std::optional<std::size_t> forker = this_worker::index();
    // The forked half: stolen if it runs on another thread than ours.
    auto forked = [&](std::size_t a, std::size_t b) {
      const running_in_scope scope{s.owner};
      return divide<T>(s, a, b, sp, this_worker::index() != forker, leaf, combine);
    };
    if (!keeps_right(s, forker, mid)) {
      auto run_left = [&] { return divide<T>(s, lo, mid, sp, false, leaf, combine); };
      auto run_right = [&] { return forked(mid, hi); };
      auto [left, right] = fork(s.owner, run_left, run_right);
      if (!left || !right) return std::nullopt;
      return std::optional<T>{combine(std::move(*left), std::move(*right))};
    }
    // The right half runs here, first. Its exception waits until the left
    // half has finished, and goes only if the left one threw none: the
    // lowest index wins, as when the left half runs here (join rethrows
    // its first callable's exception before its second's).
    std::exception_ptr right_error;
    auto run_right = [&]() -> std::optional<T> {
      try {
        return divide<T>(s, mid, hi, sp, false, leaf, combine);
      } catch (...) {
        right_error = std::current_exception();
        return std::nullopt;
      }
    };
    auto run_left = [&] { return forked(lo, mid); };
    auto [right, left] = fork(s.owner, run_right, run_left);
    if (right_error) std::rethrow_exception(right_error);
    if (!left || !right) return std::nullopt;
    return std::optional<T>{combine(std::move(*left), std::move(*right))};
  } catch (...) {
    s.stop.store(true, std::memory_order_relaxed);
    throw;
  }
}

// Runs the whole loop over [0, n) on p: directly when this thread already
// runs algorithm code of p (nested calls) or can stand in for one of p's
// workers (an outside caller), else as one job of p that the caller waits
// for (future::get helps on a worker, and runs it in sequential mode).
template <class T, class Leaf, class Combine>
T run(pool& p, std::size_t n, std::size_t grain, Leaf& leaf, Combine& combine) {
  loop_state s{p, n, grain};
  auto root = [&]() -> T {
    const running_in_scope scope{p};
    std::optional<T> r = divide<T>(s, 0, n, splitter{s.workers}, false, leaf, combine);
    // NOLINTNEXTLINE(bugprone-unchecked-optional-access): empty only with an exception
    return std::move(*r);
  };
  if (running_in == &p && this_worker::index().has_value()) return root();
  {
    // An outside caller runs the loop itself, in a worker's place, instead
    // of waiting for a worker to ("Where it runs" in docs/algorithms.md).
    const detail::scheduler::stand_in guest{p};
    if (guest.held()) return root();
  }
  // The root must run once the call has begun, whoever runs it: purge()
  // keeps it and the bound does not hold it up ("Where it runs").
  return detail::scheduler::submit_kept(p, root).get();
}

// Pieces of a loop without a result.
using nothing = std::monostate;
inline constexpr auto keep_nothing = [](nothing, nothing) noexcept { return nothing{}; };

inline void check_grain(grain g, const char* fn) {
  if (g.size == 0) {
    throw usage_error(std::string(fn) +
                      ": weft::grain{0}: a piece needs at least one element; pass "
                      "weft::grain{1} or more (or leave it out)");
  }
}

// The length of [first, last); throws usage_error when last is before first.
template <std::random_access_iterator It>
std::size_t length(It first, It last, const char* fn) {
  const auto n = last - first;
  if (n < 0) {
    throw usage_error(std::string(fn) +
                      ": last is before first; pass [first, last) with first <= last, "
                      "both from the same range");
  }
  return static_cast<std::size_t>(n);
}

template <class T, class It, class Op, class Tf>
T transform_reduce_impl(pool& p, It first, It last, T init, Op& op, Tf& tf, grain g,
                        const char* fn) {
  check_grain(g, fn);
  const std::size_t n = length(first, last, fn);
  if (n == 0) return init;
  // The leftmost piece starts from init, every other one from its first
  // element: init is used exactly once, as the leftmost operand.
  auto leaf = [&](std::size_t lo, std::size_t hi) -> T {
    // Local iterators: the loop reads no state through the closure.
    It it = first + static_cast<std::iter_difference_t<It>>(lo);
    const It end = first + static_cast<std::iter_difference_t<It>>(hi);
    T acc = lo == 0 ? T(std::move(init)) : T(std::invoke(tf, *it++));
    for (; it != end; ++it) acc = std::invoke(op, std::move(acc), std::invoke(tf, *it));
    return acc;
  };
  auto combine = [&](T&& left, T&& right) -> T {
    return std::invoke(op, std::move(left), std::move(right));
  };
  return run<T>(p, n, g.size, leaf, combine);
}

}  // namespace detail::algo

/// An iterator the parallel algorithms take: random access, so that a range
/// splits in two in constant time (vector, array, deque, span, pointers,
/// std::views::iota).
template <class It>
concept random_access_input = std::random_access_iterator<It>;

/// A range weft::map takes: random access and sized.
template <class R>
concept random_access_input_range =
    std::ranges::random_access_range<R> && std::ranges::sized_range<R>;

/// An element function: F can be called with an element of It (*it).
template <class F, class It>
concept element_function = std::is_invocable_v<F&, std::iter_reference_t<It>>;

namespace detail::algo {

// What reduce and transform_reduce fold: init's type T starts from an
// element U (the first of every piece but the leftmost), op(T, U) folds an
// element in and op(T, T) combines two pieces, both giving a T.
template <class Op, class T, class U>
concept folds = std::constructible_from<T, U> && std::is_invocable_r_v<T, Op&, T, U> &&
    std::is_invocable_r_v<T, Op&, T, T>;

// What map can collect: a value f returns, the vector's elements.
template <class R>
concept map_result =
    !std::is_void_v<R> && std::is_default_constructible_v<R> && std::is_move_assignable_v<R>;

// The reasons reduce and transform_reduce refuse an init and an op, for
// their diagnostic overloads: the first that applies.
template <class Op, class T, class U>
constexpr void explain_folds() {
  if constexpr (!std::constructible_from<T, U>) {
    static_assert(std::constructible_from<T, U>,
                  "weft::reduce/transform_reduce: the type of init must be constructible from "
                  "each (transformed) element: the first element of every piece but the "
                  "leftmost starts that piece's partial result");
  } else if constexpr (!std::is_invocable_r_v<T, Op&, T, U>) {
    static_assert(std::is_invocable_r_v<T, Op&, T, U>,
                  "weft::reduce/transform_reduce: op(T, element) must return something "
                  "convertible to T, the type of init");
  } else {
    static_assert(std::is_invocable_r_v<T, Op&, T, T>,
                  "weft::reduce/transform_reduce: op(T, T) must return something convertible "
                  "to T, the type of init (it combines two pieces' partial results)");
  }
}

}  // namespace detail::algo

// Every algorithm comes in two overloads: the one that runs, constrained by
// what it takes, and a diagnostic one for every other call, whose
// static_assert says what is wrong as the first error and the only one
// (the constrained overload is more constrained, so it wins whenever it is
// viable; tests/compile_fail checks the messages). Doxygen does not list
// the diagnostic ones.

// All algorithms below run on `pool`. Called from a thread that is no
// worker, on a pool of two workers or more, the caller runs the loop itself
// in a worker's place (its elements see this_worker::index() == max_size(),
// the helper slot) while one worker fewer is woken; called from a worker of
// any pool, or when the pool is sequential, has one worker, is paused or
// its helper slot is taken, they run as one job of the pool and the caller
// waits (helping on a worker, running the jobs in sequential mode); called
// from inside one of their own element functions on the same pool they fork
// at once (docs/algorithms.md, "Where it runs"). Element functions may run
// concurrently on several threads and must be safe to call so. The first
// exception an element function (or op) throws stops the loop: pieces not
// yet started are skipped, and once every started piece has finished the
// exception of the lowest index among those that threw is rethrown.
// Misuse (last before first, grain{0}) throws weft::usage_error.

/// Calls f(*it) for every it in [first, last).
template <random_access_input It, element_function<It> F>
void for_each(pool& pool, It first, It last, F f, grain g = {}) {
  detail::algo::check_grain(g, "weft::for_each");
  const std::size_t n = detail::algo::length(first, last, "weft::for_each");
  if (n == 0) return;
  auto leaf = [&](std::size_t lo, std::size_t hi) {
    const It end = first + static_cast<std::iter_difference_t<It>>(hi);
    for (It it = first + static_cast<std::iter_difference_t<It>>(lo); it != end; ++it)
      std::invoke(f, *it);
    return detail::algo::nothing{};
  };
  auto combine = detail::algo::keep_nothing;
  detail::algo::run<detail::algo::nothing>(pool, n, g.size, leaf, combine);
}
// for_each that is not given random-access iterators, or an f it can call.
/// \cond
template <class It, class F>
void for_each(pool&, It, It, F, grain = {}) {
  if constexpr (!random_access_input<It>) {
    static_assert(random_access_input<It>,
                  "weft::for_each: random-access iterators only (vector, array, deque, "
                  "pointers, std::views::iota); copy other ranges into a std::vector first");
  } else {
    static_assert(element_function<F, It>,
                  "weft::for_each: f must be callable with an element (*first)");
  }
}
/// \endcond

/// Calls f(i) for every integer i in [begin, end), in the common type I of
/// both bounds. Throws usage_error if a bound does not fit I (e.g. -1 and a
/// std::size_t) or end < begin.
template <std::integral B, std::integral E, class F>
requires std::is_invocable_v<F&, std::common_type_t<B, E>>
void for_each_index(pool& pool, B begin, E end, F f, grain g = {}) {
  using I = std::common_type_t<B, E>;
  using U = std::make_unsigned_t<I>;
  detail::algo::check_grain(g, "weft::for_each_index");
  if (!std::in_range<I>(begin) || !std::in_range<I>(end)) {
    throw usage_error(
        "weft::for_each_index: begin and end do not both fit their common type (a negative "
        "bound with an unsigned one?); convert them to one integer type first");
  }
  const auto b = static_cast<I>(begin);
  const auto e = static_cast<I>(end);
  if (e < b) {
    throw usage_error("weft::for_each_index: end is less than begin; pass begin <= end");
  }
  const U span = static_cast<U>(static_cast<U>(e) - static_cast<U>(b));
  if (!std::in_range<std::size_t>(span)) {
    throw usage_error(
        "weft::for_each_index: more indices than std::size_t can count; split the range");
  }
  const auto n = static_cast<std::size_t>(span);
  if (n == 0) return;
  auto leaf = [&](std::size_t lo, std::size_t hi) {
    // Modular arithmetic in U, then back to I: exact, since every index is
    // in [b, e).
    const auto base = static_cast<U>(b);
    for (std::size_t i = lo; i < hi; ++i)
      std::invoke(f, static_cast<I>(static_cast<U>(base + static_cast<U>(i))));
    return detail::algo::nothing{};
  };
  auto combine = detail::algo::keep_nothing;
  detail::algo::run<detail::algo::nothing>(pool, n, g.size, leaf, combine);
}
// for_each_index that is not given integers, or an f it can call.
/// \cond
template <class B, class E, class F>
void for_each_index(pool&, B, E, F, grain = {}) {
  if constexpr (!std::integral<B> || !std::integral<E>) {
    static_assert(std::integral<B> && std::integral<E>,
                  "weft::for_each_index: begin and end must be integers (for iterators, use "
                  "weft::for_each)");
  } else {
    static_assert(std::is_invocable_v<F&, std::common_type_t<B, E>>,
                  "weft::for_each_index: f must be callable with an index (the common type of "
                  "begin and end)");
  }
}
/// \endcond

/// out[i] = f(first[i]) for every i; returns out + (last - first). `out` must
/// be a random-access iterator to at least that many elements; [first, last)
/// and the output may coincide (in place) but must not otherwise overlap.
template <random_access_input It, std::random_access_iterator Out, element_function<It> F>
requires std::is_assignable_v<std::iter_reference_t<Out>,
                              std::invoke_result_t<F&, std::iter_reference_t<It>>>
    Out transform(pool& pool, It first, It last, Out out, F f, grain g = {}) {
  detail::algo::check_grain(g, "weft::transform");
  const std::size_t n = detail::algo::length(first, last, "weft::transform");
  if (n == 0) return out;
  auto leaf = [&](std::size_t lo, std::size_t hi) {
    const It end = first + static_cast<std::iter_difference_t<It>>(hi);
    Out to = out + static_cast<std::iter_difference_t<Out>>(lo);
    for (It it = first + static_cast<std::iter_difference_t<It>>(lo); it != end; ++it, ++to)
      *to = std::invoke(f, *it);
    return detail::algo::nothing{};
  };
  auto combine = detail::algo::keep_nothing;
  detail::algo::run<detail::algo::nothing>(pool, n, g.size, leaf, combine);
  return out + static_cast<std::iter_difference_t<Out>>(n);
}
// transform that is not given random-access iterators, an f it can call,
// or an output that takes f's results.
/// \cond
template <class It, class Out, class F>
Out transform(pool&, It, It, Out out, F, grain = {}) {
  if constexpr (!random_access_input<It>) {
    static_assert(random_access_input<It>,
                  "weft::transform: random-access input iterators only (vector, array, deque, "
                  "pointers, std::views::iota); copy other ranges into a std::vector first");
  } else if constexpr (!std::random_access_iterator<Out>) {
    static_assert(std::random_access_iterator<Out>,
                  "weft::transform: the output must be a random-access iterator (e.g. "
                  "v.begin() of a vector already sized, not std::back_inserter)");
  } else if constexpr (!element_function<F, It>) {
    static_assert(element_function<F, It>,
                  "weft::transform: f must be callable with an element (*first)");
  } else {
    static_assert(std::is_assignable_v<std::iter_reference_t<Out>,
                                       std::invoke_result_t<F&, std::iter_reference_t<It>>>,
                  "weft::transform: f's result must be assignable to an element of the output "
                  "(*out = f(*first))");
  }
  return out;
}
/// \endcond

/// Returns init op x0 op x1 op ... op x(n-1) for an associative op (it need
/// not be commutative, and need not have an identity): the result equals the
/// sequential left fold up to associativity, on every run. init is used
/// exactly once, as the leftmost operand; every piece folds left to right,
/// and two adjacent pieces combine as op(left, right). T is init's type.
template <random_access_input It, class T, class Op = std::plus<>>
requires detail::algo::folds<Op, T, std::iter_reference_t<It>> T reduce(pool& pool, It first,
                                                                        It last, T init, Op op = {},
                                                                        grain g = {}) {
  auto identity = [](auto&& x) -> decltype(auto) { return std::forward<decltype(x)>(x); };
  return detail::algo::transform_reduce_impl(pool, first, last, std::move(init), op, identity, g,
                                             "weft::reduce");
}
// reduce that is not given random-access iterators, or an init and op it
// can fold with.
/// \cond
template <class It, class T, class Op = std::plus<>>
T reduce(pool&, It, It, T init, Op = {}, grain = {}) {
  if constexpr (!random_access_input<It>) {
    static_assert(random_access_input<It>,
                  "weft::reduce: random-access iterators only (vector, array, deque, pointers, "
                  "std::views::iota); copy other ranges into a std::vector first");
  } else {
    detail::algo::explain_folds<Op, T, std::iter_reference_t<It>>();
  }
  return init;
}
/// \endcond

/// reduce() over transform_op(*it) instead of *it, in the same order.
template <random_access_input It, class T, class Op, element_function<It> Tf>
requires detail::algo::folds<Op, T, std::invoke_result_t<Tf&, std::iter_reference_t<It>>> T
transform_reduce(pool& pool, It first, It last, T init, Op reduce_op, Tf transform_op,
                 grain g = {}) {
  return detail::algo::transform_reduce_impl(pool, first, last, std::move(init), reduce_op,
                                             transform_op, g, "weft::transform_reduce");
}
// transform_reduce that is not given random-access iterators, a
// transform_op it can call, or an init and reduce_op it can fold with.
/// \cond
template <class It, class T, class Op, class Tf>
T transform_reduce(pool&, It, It, T init, Op, Tf, grain = {}) {
  if constexpr (!random_access_input<It>) {
    static_assert(random_access_input<It>,
                  "weft::transform_reduce: random-access iterators only (vector, array, deque, "
                  "pointers, std::views::iota); copy other ranges into a std::vector first");
  } else if constexpr (!element_function<Tf, It>) {
    static_assert(element_function<Tf, It>,
                  "weft::transform_reduce: transform_op must be callable with an element "
                  "(*first)");
  } else {
    detail::algo::explain_folds<Op, T, std::invoke_result_t<Tf&, std::iter_reference_t<It>>>();
  }
  return init;
}
/// \endcond

/// Returns {f(r[0]), f(r[1]), ...}: the results in input order. The result
/// type R (f's, without reference or cv) must be default-constructible and
/// move-assignable.
template <random_access_input_range Range, element_function<std::ranges::iterator_t<Range>> F>
requires detail::algo::map_result<
    std::remove_cvref_t<std::invoke_result_t<F&, std::ranges::range_reference_t<Range>>>>
auto map(pool& pool, Range&& range, F f, grain g = {}) {
  using R = std::remove_cvref_t<std::invoke_result_t<F&, std::ranges::range_reference_t<Range>>>;
  // std::vector<bool> packs bits: parallel writes to neighbours would race.
  using Slot = std::conditional_t<std::is_same_v<R, bool>, unsigned char, R>;
  detail::algo::check_grain(g, "weft::map");
  auto first = std::ranges::begin(range);
  const auto n = static_cast<std::size_t>(std::ranges::size(range));
  std::vector<Slot> slots(n);
  weft::transform(pool, first, first + static_cast<std::ranges::range_difference_t<Range>>(n),
                  slots.begin(), f, g);
  if constexpr (std::is_same_v<R, bool>) {
    return std::vector<bool>(slots.begin(), slots.end());
  } else {
    return slots;
  }
}
// map that is not given a sized random-access range, an f it can call, or
// an f whose results it can collect. Its return type is deduced, so that
// `auto r = weft::map(...)` reports the static_assert first.
/// \cond
template <class Range, class F>
auto map(pool&, Range&&, F, grain = {}) {
  if constexpr (!random_access_input_range<Range>) {
    static_assert(random_access_input_range<Range>,
                  "weft::map: the range must be sized and random-access (vector, array, span, "
                  "std::views::iota); copy other ranges into a std::vector first");
  } else if constexpr (!element_function<F, std::ranges::iterator_t<Range>>) {
    static_assert(element_function<F, std::ranges::iterator_t<Range>>,
                  "weft::map: f must be callable with an element of the range");
  } else {
    using R = std::remove_cvref_t<std::invoke_result_t<F&, std::ranges::range_reference_t<Range>>>;
    if constexpr (std::is_void_v<R>) {
      static_assert(!std::is_void_v<R>, "weft::map: f returns nothing; use weft::for_each");
    } else {
      static_assert(detail::algo::map_result<R>,
                    "weft::map: f's result type must be default-constructible and "
                    "move-assignable (the vector is sized first, then filled in parallel)");
    }
  }
  return detail::algo::nothing{};
}
/// \endcond

}  // namespace weft
