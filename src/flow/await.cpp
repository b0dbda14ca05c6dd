// co_await of a weft::flow_task inside a weft::coro: the flow's side
// (detail/coro_flow.hpp has the awaiter; docs/coroutines.md, "Awaiting a
// flow task"). A flow nobody awaits pays nothing for it: the awaited task
// gets an ordinary successor, a barrier task like wait(x)'s, whose
// callable's destruction records the flow's state for the awaiter.
#include <exception>
#include <mutex>
#include <new>

#include "internal.hpp"
#include "weft/detail/coro_flow.hpp"
#include "weft/flow.hpp"

namespace weft::detail {

bool flow_core::watch(flow_node* n, std::uint32_t generation, flow_watch& w) {
  enter_producer();
  const producer_scope scope{*this};
  const node_ref r{n, generation};
  // A sequential pool runs the flow's tasks on the thread that waits for
  // them: this one, up to the awaited task (as wait(x) does).
  if (sequential_ && !finished(r)) run_sequential(n);
  if (finished(r)) {
    observe(w);
    return false;
  }
  flow_node* b = allocate_internal();
  try {
    record* rec = start_record(b, "await");
    scratch_.clear();
    ++mark_;
    add_predecessor(b, r, nullptr, access_mode::write, rec);
    count_unfinished(1);
  } catch (...) {
    give_back(b);
    throw;
  }
  b->barrier = &w.reached;
  // The barrier's "callable" is the watch: finish_body() destroys it after
  // the (empty) body, whether the flow had stopped or not, before the
  // barrier is set and before the node can be reused.
  ::new (static_cast<void*>(b->storage)) flow_watch*(&w);
  b->destroy = &observe_at_barrier;
  link_and_release(b, nullptr, 0);
  return true;
}

void flow_core::observe_at_barrier(flow_node* n) noexcept {
  flow_watch* const w = *std::launder(reinterpret_cast<flow_watch**>(n->storage));
  n->owner->observe(*w);
}

void flow_core::observe(flow_watch& w) noexcept {
  // Runs after the awaited task has finished: its barrier released by it
  // (an acq_rel decrement of the barrier's pending count), or the producer
  // that saw it done (finished()'s acquire load). A failure or cancel the
  // task saw is therefore seen here too. Acquire pairs with fail()'s
  // release: a failure seen here has its error stored.
  if ((status_.load(std::memory_order_acquire) & failed_bit) != 0) {
    const std::lock_guard lock{error_mutex_};
    w.error = error_;
    return;
  }
  // Relaxed: see stopping(); only this flow's producer (the awaiter) clears
  // the bit, in wait().
  w.cancelled = (unfinished_.load(std::memory_order_relaxed) & cancel_bit) != 0;
}

coro_flow_awaiter::coro_flow_awaiter(const flow_task& t)
    : node_(t.node_), generation_(t.generation_) {
  if (node_ == nullptr) {
    throw usage_error(
        "weft::coro: co_await of an empty weft::flow_task (default-constructed); await the "
        "task flow::emplace returned");
  }
}

bool coro_flow_awaiter::await_ready() { return !node_->owner->watch(node_, generation_, watch_); }

void coro_flow_awaiter::await_resume() const {
  if (watch_.error) std::rethrow_exception(watch_.error);
  if (watch_.cancelled) {
    throw run_cancelled(
        "weft::coro: the awaited flow task's flow was cancelled (flow::cancel()): its tasks "
        "that had not started were skipped");
  }
}

}  // namespace weft::detail
