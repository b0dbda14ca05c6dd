// weft::flow on a sequential pool: the tasks run in program order on the
// waiting thread (their submission, submit_sequential(), is with the
// producer's in src/flow/produce.cpp).
#include <cstdint>

#include "internal.hpp"
#include "weft/detail/context.hpp"
#include "weft/flow.hpp"

namespace weft::detail {

// Runs the queued tasks in program order, up to and including `last` (all
// of them when null).
void flow_core::run_sequential(const flow_node* last) {
  std::size_t i = 0;
  bool reached = false;
  struct consumed {
    flow_core& core;
    std::size_t& i;
    ~consumed() {
      auto& q = core.sequential_queue_;
      q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(i));
      core.sequential_size_.store(q.size(), std::memory_order_relaxed);
    }
  } guard{*this, i};
  for (; i < sequential_queue_.size() && !reached; ++i) {
    flow_node* n = sequential_queue_[i];
    reached = n == last;
    // Acquire pairs with on_future_ready()'s decrement.
    auto ready = [n] { return n->pending.load(std::memory_order_acquire) == 0; };
    if (!ready()) {
      scheduler::wait_for(*pool_, ready, [&] {
        backoff wait;
        while (!ready()) wait.pause();
      });
    }
    run_body(n);
    n->phase.store(flow_node::done, std::memory_order_relaxed);
    n->free_next = free_;
    free_ = n;
  }
}

}  // namespace weft::detail
