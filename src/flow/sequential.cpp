// weft::flow on a sequential pool: the tasks run in program order on the
// waiting thread.
#include <cstdint>

#include "internal.hpp"
#include "weft/detail/context.hpp"
#include "weft/flow.hpp"

namespace weft::detail {

// Sequential pools: the tasks run in program order on the waiting thread.
void flow_core::submit_sequential(flow_node* n, const access_desc* accesses, std::size_t count) {
  try {
    sequential_queue_.reserve(sequential_queue_.size() + 1);
  } catch (...) {
    give_back(n);
    throw;
  }
  try {
    record* rec = options_.keep_graph ? start_record(n, nullptr) : nullptr;
    collect_predecessors(n, accesses, count, rec);
    // Futures are waited for through the node's count, as in a parallel
    // run: the latch itself may be gone by the time the task runs.
    const std::int32_t futures = count_futures(accesses, count);
    prepare_future_waiters(n, futures);
    n->pending.store(futures, std::memory_order_relaxed);
    if (futures != 0) {
      const std::int32_t ready = subscribe_futures(n, accesses, count);
      // acq_rel: as on_future_ready().
      if (ready != 0) n->pending.fetch_sub(ready, std::memory_order_acq_rel);
    }
  } catch (...) {
    disarm(n);
    n->pending.store(0, std::memory_order_relaxed);
    sequential_queue_.push_back(n);  // reserved above
    sequential_size_.store(sequential_queue_.size(), std::memory_order_relaxed);
    throw;
  }
  sequential_queue_.push_back(n);
  sequential_size_.store(sequential_queue_.size(), std::memory_order_relaxed);
  if (options_.window != 0 && sequential_queue_.size() >= options_.window) run_sequential(nullptr);
}

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
