// co_await of a weft::flow_task inside a weft::coro (docs/coroutines.md,
// "Awaiting a flow task"): the coroutine suspends until the task has
// finished, holding no worker, and resumes as a job of its own pool. The
// flow's side (a barrier task after the awaited one) is in src/flow/await.cpp,
// so that this header needs nothing of weft/flow.hpp.
#pragma once

#include <coroutine>
#include <cstdint>
#include <exception>

#include "coro_await.hpp"
#include "coro_promise.hpp"
#include "latch.hpp"

namespace weft {
class flow_task;
}  // namespace weft

namespace weft::detail {

struct flow_node;

// What an awaited flow task tells its awaiter: `reached` is set once the
// task has finished, and before that the flow's state at that moment is
// recorded (flow_core::observe()): its first exception, or that it was
// cancelled. Filled by the flow's side only; read by the awaiter once
// `reached` is set (or, when the task had finished already, at once).
struct flow_watch {
  latch reached;
  std::exception_ptr error;
  bool cancelled = false;
};

// The awaiter, in the awaiting coroutine's frame. await_ready() is the
// flow's producer operation (as wait(x) is): if the task has finished it
// does not suspend (a flow of a sequential pool first runs its program up to
// the task); otherwise it emplaces a barrier task after it, whose end fills
// watch_ and sets watch_.reached. await_suspend() subscribes to that latch,
// whose set() queues the coroutine's resumption on its own pool.
class coro_flow_awaiter : latch_waiter, coro_resume {
 public:
  // Throws usage_error for an empty handle.
  explicit coro_flow_awaiter(const flow_task& t);
  coro_flow_awaiter(const coro_flow_awaiter&) = delete;
  coro_flow_awaiter& operator=(const coro_flow_awaiter&) = delete;
  // Moved only before it is awaited (a compiler may move the awaitable into
  // the frame): the watch is not armed yet.
  coro_flow_awaiter(coro_flow_awaiter&& other) noexcept
      : latch_waiter(), coro_resume(), node_(other.node_), generation_(other.generation_) {}
  coro_flow_awaiter& operator=(coro_flow_awaiter&&) = delete;
  ~coro_flow_awaiter() = default;

  // True if the task has finished (no suspension); may emplace the barrier.
  [[nodiscard]] bool await_ready();
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) noexcept {
    arm(h, "coro after flow");
    this->notify = &notified;
    // false: the barrier has run meanwhile, resume at once. After a
    // successful subscribe the coroutine may already be resuming elsewhere:
    // nothing of *this is touched again here.
    return watch_.reached.subscribe(this);
  }
  // Rethrows the flow's first exception, or run_cancelled, if the flow had
  // stopped by the time the task finished.
  void await_resume() const;

 private:
  static void notified(latch_waiter* w) noexcept {
    coro_resume_later(*static_cast<coro_flow_awaiter*>(w), true);
  }

  flow_node* node_ = nullptr;
  std::uint32_t generation_ = 0;
  flow_watch watch_;
};

}  // namespace weft::detail
