// co_await weft::join(coros...): fork-join of coroutines by child stealing
// (docs/coroutines.md, "Join: what is stolen").
#pragma once

#include <array>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <tuple>
#include <utility>

#include "../future.hpp"
#include "context.hpp"
#include "coro_promise.hpp"
#include "local.hpp"

namespace weft::detail {

// The awaiter, in the parent's frame: the children and one resumption job
// per child, so that a join allocates nothing beyond the children's frames.
// The parent suspends, queues children 1..n-1 on its worker's deque (any
// idle worker may steal them), and transfers to child 0. Whoever finishes
// last (pending reaches 0) resumes the parent by symmetric transfer; a child
// that finishes earlier returns to its job's caller, which on a worker pops
// the next queued child from the top of its own deque, so that nothing
// stolen means one thread running the children in order, depth first.
// pending cannot reach 0 before child 0 has started, which await_suspend()
// does last: the parent is never resumed while it is still suspending. On a
// thread that is not one of the pool's workers (a sequential pool's), the
// children are chained instead: each one that finishes transfers to the
// next, so that they run in argument order, depth first, with no queue.
template <class... Ts>
class coro_join_awaiter : coro_join_link {
  static constexpr std::size_t n = sizeof...(Ts);

 public:
  explicit coro_join_awaiter(coro<Ts>&&... cs) : children_(std::move(cs)...) {
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
  // Moved only before it is awaited (a compiler may move the awaitable
  // into the frame); the slots are filled by await_suspend().
  coro_join_awaiter(coro_join_awaiter&& other) noexcept : children_(std::move(other.children_)) {}
  coro_join_awaiter& operator=(coro_join_awaiter&&) = delete;
  ~coro_join_awaiter() = default;

  [[nodiscard]] bool await_ready() const noexcept { return false; }

  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
    coro_root* const r = h.promise().root_;
    parent = h;
    // Relaxed: the queues hand it to the thieves with the jobs (a steal
    // acquires what the push released).
    pending.store(n, std::memory_order_relaxed);
    link(r, std::index_sequence_for<Ts...>{});
    if (worker* const self = tls.self; self != nullptr && tls.owner == r->owner) {
      // Last child first, so that child 1 is on top when child 0 returns.
      for (std::size_t i = n - 1; i >= 1; --i) {
        try {
          local::push_public(*r->owner, *self, &slots_[i]);
        } catch (...) {  // the deque could not grow: run the child here, now
          coro_resume::resume_here(&slots_[i]);
        }
      }
    } else {
      // A sequential pool's thread (or, rarely, a resumption off the pool):
      // the children run here one after the other, in argument order, each
      // finished one transferring to the next (coro_promise_base::finished).
      chain = slots_.data();
      count = n;
    }
    // A child run here meanwhile finished without resuming the parent:
    // child 0 keeps pending above 0.
    return slots_[0].handle;
  }

  // Every child's result, or the exception of the first child (in argument
  // order) that threw, once all have finished.
  std::tuple<result_t<Ts>...> await_resume() {
    std::exception_ptr first;
    std::apply(
        [&first](coro<Ts>&... c) {
          ((first = first ? first : coro_access::handle(c).promise().error_), ...);
        },
        children_);
    if (first) std::rethrow_exception(first);
    return std::apply([](coro<Ts>&... c) { return std::tuple<result_t<Ts>...>{take(c)...}; },
                      children_);
  }

 private:
  template <std::size_t... I>
  void link(coro_root* r, std::index_sequence<I...> /*indices*/) noexcept {
    (link_one(r, std::get<I>(children_), slots_[I]), ...);
  }
  template <class T>
  void link_one(coro_root* r, coro<T>& c, coro_resume& slot) noexcept {
    auto h = coro_access::handle(c);
    h.promise().root_ = r;
    h.promise().join_ = this;
    slot.handle = h;
    slot.root = r;
    slot.label = "coro join child";
  }
  template <class T>
  static result_t<T> take(coro<T>& c) {
    if constexpr (std::is_void_v<T>) {
      coro_access::handle(c).promise().take();
      return {};
    } else {
      return coro_access::handle(c).promise().take();
    }
  }

  std::tuple<coro<Ts>...> children_;
  std::array<coro_resume, n> slots_;
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
/// std::move); throws usage_error for an empty or finished one.
template <class A, class B, class... Ts>
[[nodiscard]] detail::coro_join_awaiter<A, B, Ts...> join(coro<A>&& a, coro<B>&& b,
                                                          coro<Ts>&&... rest) {
  return detail::coro_join_awaiter<A, B, Ts...>{std::move(a), std::move(b), std::move(rest)...};
}

}  // namespace weft
