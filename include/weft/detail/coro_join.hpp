// co_await weft::join(coros...): fork-join of coroutines by child stealing
// (docs/coroutines.md, "Join: what is stolen").
#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>
#include <new>
#include <tuple>
#include <utility>

#include "../future.hpp"
#include "context.hpp"
#include "coro_promise.hpp"
#include "local.hpp"

namespace weft::detail {

// The awaiter, in the parent's frame: the children and one slot (the job
// that resumes it from a deque) per child, so that a join allocates nothing
// beyond the children's frames. The parent suspends, pushes children
// 1..n-1 onto its worker's deque, last first, and transfers to child 0. A
// child that finishes takes the next one back from the deque's top and
// hands on to it (coro_promise_base::finish_child()), so that with nothing
// stolen one thread runs the children in order, depth first, with no
// atomic read-modify-write, and the last one resumes the parent. Idle
// workers steal queued children from the bottom, the last ones first; a
// child that finds its next sibling gone decrements `pending` by the
// children it carries, and whoever brings it to zero resumes the parent.
// pending cannot reach 0 before child 0 has finished, and child 0 starts
// only when await_suspend() returns it: the parent is never resumed while
// it is still suspending. The children are pushed into the deque's private
// part, as join's second half is (thieves see them once the worker's
// public part runs dry, or once it goes back to its loop): the children of
// one join never wait for each other but through the join. On a thread
// that is not one of the pool's workers (a sequential pool's), the
// children are chained instead: each one that finishes hands on to the
// next, so that they run in argument order, depth first, with no queue.
template <class... Ts>
class coro_join_awaiter : coro_join_link {
  static constexpr std::size_t n = sizeof...(Ts);

 public:
  // Made in place by the promise's await_transform(), in the parent's
  // frame; borrows the children from the coro_join_args that weft::join()
  // returned, a temporary of the same full-expression (or a variable the
  // caller moved from), which destroys them (and so frees their frames)
  // after await_resume().
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init): await_suspend() sets the link
  explicit coro_join_awaiter(std::tuple<coro<Ts>...>& children) : children_(children) {
    std::apply(
        [](const coro<Ts>&... c) {
          if (!(c.valid() && ...)) {
            throw usage_error(
                "weft::join: a coro given to it is empty or finished (moved from, or awaited "
                "already); join each coro once");
          }
        },
        children_);
  }
  coro_join_awaiter(const coro_join_awaiter&) = delete;
  coro_join_awaiter& operator=(const coro_join_awaiter&) = delete;
  coro_join_awaiter(coro_join_awaiter&&) = delete;
  coro_join_awaiter& operator=(coro_join_awaiter&&) = delete;
  // The slots are plain data (trivially destructible): nothing to end.
  ~coro_join_awaiter() {}  // NOLINT(modernize-use-equals-default): the union's slots

  [[nodiscard]] bool await_ready() const noexcept { return false; }

  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
    coro_root* const r = h.promise().root_;
    parent = h;
    slots = slots_;
    count = n;
    root = r;
    // Relaxed: the queues hand it to the thieves with the slots (a steal
    // acquires what the publication of the deque's items released).
    pending.store(n, std::memory_order_relaxed);
    link(r, std::index_sequence_for<Ts...>{});
    home = nullptr;
    if (worker* const self = tls.self; self != nullptr && tls.owner == r->owner) {
      home = self;
      // Last child first, so that child 1 is on top when child 0 finishes.
      for (std::size_t i = n - 1; i >= 1; --i) {
        try {
          local::push_private(*r->owner, *self, &slots_[i]);
        } catch (...) {
          // The deque could not grow: run the child here, now. It takes
          // back the ones pushed after it, and leaves pending above 0
          // (child 0 has not run).
          coro_join_slot::resume_child(&slots_[i]);
        }
      }
    }
    // else: a sequential pool's thread (or, rarely, a resumption off the
    // pool): home stays null, and the children run here one after the
    // other, in argument order, each finished one handing on to the next.
    return slots_[0].handle;
  }

  // Every child's result, or the exception of the first child (in argument
  // order) that threw, once all have finished.
  std::tuple<result_t<Ts>...> await_resume() {
    // The first error by address: no exception_ptr copy on the way.
    const std::exception_ptr* first = nullptr;
    std::apply(
        [&first](coro_result<Ts>&... r) {
          ((first = first != nullptr || !r.error ? first : &r.error), ...);
        },
        results_);
    if (first != nullptr) std::rethrow_exception(*first);
    return std::apply([](coro_result<Ts>&... r) { return std::tuple<result_t<Ts>...>{take(r)...}; },
                      results_);
  }

 private:
  template <std::size_t... I>
  void link(coro_root* r, std::index_sequence<I...> /*indices*/) noexcept {
    (link_one(r, std::get<I>(children_), std::get<I>(results_), I), ...);
  }
  // Takes the child's coroutine from its coro: from here on its frame frees
  // itself when it finishes (or, finished suspended, its result frees it).
  template <class T>
  void link_one(coro_root* r, coro<T>& c, coro_result<T>& result, std::size_t index) noexcept {
    auto h = coro_access::release(c);
    coro_join_slot* const slot = ::new (&slots_[index]) coro_join_slot(h, this, index);
    h.promise().root_ = r;
    h.promise().slot_ = slot;
    h.promise().result_ = &result;
  }
  template <class T>
  static result_t<T> take(coro_result<T>& r) {
    if constexpr (std::is_void_v<T>) {
      r.take();
      return {};
    } else {
      return r.take();
    }
  }

  std::tuple<coro<Ts>...>& children_;
  std::tuple<coro_result<Ts>...> results_;
  // Made by await_suspend(), all fields at once: a join that never
  // suspends (its co_await threw first) leaves them unmade.
  union {
    coro_join_slot slots_[n];
  };
};

// What weft::join(coros...) returns: the children, until the co_await that
// joins them (coro_promise_base::await_transform(), which makes the awaiter
// above) is over; then their frames go with it.
template <class... Ts>
struct coro_join_args {
  std::tuple<coro<Ts>...> children;
};

}  // namespace weft::detail

namespace weft {

/// Inside a weft::coro, `co_await weft::join(c1, c2, ...)` runs the coros
/// c1, c2, ... possibly in parallel and resumes with a std::tuple of their
/// results (std::monostate for a void one). The children after the first
/// wait on the worker's deque, where idle workers may steal them; the
/// parent resumes on the thread that finishes the last child. If children
/// throw, the exception of the first of them (in argument order) is
/// rethrown once all have finished. Pass the coros as rvalues (calls, or
/// std::move); for an empty or finished one, the co_await throws
/// usage_error (before anything runs). What join() returns holds the coros
/// until that co_await is over: await it at once.
template <class A, class B, class... Ts>
[[nodiscard]] detail::coro_join_args<A, B, Ts...> join(coro<A>&& a, coro<B>&& b,
                                                       coro<Ts>&&... rest) {
  return {{std::move(a), std::move(b), std::move(rest)...}};
}

}  // namespace weft
