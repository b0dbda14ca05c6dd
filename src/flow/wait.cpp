// weft::flow's waits: wait(), wait(x), cancel(), draining at the flow's
// end, and a worker's help towards a barrier.
#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "internal.hpp"
#include "weft/detail/backoff.hpp"
#include "weft/detail/context.hpp"
#include "weft/detail/latch.hpp"
#include "weft/detail/trace.hpp"
#include "weft/flow.hpp"

namespace weft::detail {

// ---------------------------------------------------------------------------
// Waiting

void flow_core::wait_until_below(std::uint64_t limit, std::uint64_t wish) {
  auto done = [this, limit] {
    // Acquire pairs with the finishers' decrements: their tasks' effects
    // are visible once we see the count low enough.
    return (unfinished_.load(std::memory_order_acquire) & count_mask) <= limit;
  };
  scheduler::wait_for(*pool_, done, [&] {
    parker& self = parker::current();
    // Release pairs with the finisher's acquire load of sleeper_.
    sleeper_.store(&self, std::memory_order_release);
    for (;;) {
      // seq_cst: see finish_units().
      const std::uint64_t old = unfinished_.fetch_or(wish, std::memory_order_seq_cst);
      if ((old & count_mask) <= limit) {
        // Low enough already: take the wish back, unless a finisher took it
        // first and owes us exactly one unpark.
        if ((unfinished_.fetch_and(~wish, std::memory_order_acq_rel) & wish) == 0) self.park();
        return;
      }
      self.park();  // a finisher cleared the wish and unparked us
      if (done()) return;
    }
  });
}

void flow_core::close_all_reductions() {
  objects_->for_each([this](object_state& st) {
    if (st.used && st.kind == access_mode::reduce) close_reduction(st);
  });
}

std::string flow_core::take_trace_name(std::uint64_t serial) {
  std::lock_guard lock{trace_names_mutex_};
  auto node = trace_names_.extract(serial);
  return node.empty() ? std::string{} : std::move(node.mapped());
}

void flow_core::wait() {
  enter_producer();
  const producer_scope scope{*this};
  drain();
  if (traced_) {
    // Names that came after their task's slice ended: nobody takes them.
    std::lock_guard lock{trace_names_mutex_};
    trace_names_.clear();
  }
  rethrow_and_reset();
}

void flow_core::drain() {
  close_all_reductions();
  drain_without_reductions();
}

void flow_core::drain_without_reductions() {
  if (sequential_) {
    run_sequential(nullptr);
  } else {
    wait_until_below(0, zero_bit);
  }
  // Every task has finished: the producer's state starts afresh.
  objects_->for_each([](object_state& st) { delete st.reduction; });
  objects_->clear();
  open_reductions_ = 0;
  idle_locks_.clear();
  for (auto& l : locks_) {
    l->reset();
    idle_locks_.push_back(l.get());  // capacity reserved by new_lock()
  }
  records_.clear();
}

void flow_core::rethrow_and_reset() {
  std::exception_ptr e;
  {
    std::lock_guard lock{error_mutex_};
    e = std::exchange(error_, nullptr);
  }
  // Relaxed: no task runs now.
  status_.store(0, std::memory_order_relaxed);
  const bool cancelled =
      (unfinished_.fetch_and(~cancel_bit, std::memory_order_relaxed) & cancel_bit) != 0;
  if (e) std::rethrow_exception(e);
  if (cancelled) {
    throw run_cancelled("weft::flow: cancel() skipped the tasks that had not started");
  }
}

void flow_core::report_left_errors() noexcept {
  std::exception_ptr e;
  {
    std::lock_guard lock{error_mutex_};
    e = std::exchange(error_, nullptr);
  }
  if (e) scheduler::report_error(*pool_, std::move(e));
}

bool flow_core::cancel() noexcept {
  // The request is set only in a word whose count shows unfinished tasks
  // (see cancel_bit). Relaxed: tasks only have to see it eventually
  // (stopping()), and wait() reads it after the count reached zero, later
  // in the word's modification order.
  std::uint64_t old = unfinished_.load(std::memory_order_relaxed);
  do {
    const bool busy =
        (old & count_mask) != 0 || sequential_size_.load(std::memory_order_relaxed) != 0;
    if (!busy) return false;
  } while (!unfinished_.compare_exchange_weak(old, old | cancel_bit, std::memory_order_relaxed));
  return true;
}

void flow_core::wait_for_object(const void* object) {
  enter_producer();
  const producer_scope scope{*this};
  object_state* st = objects_->find(object);
  if (st == nullptr || !st->used) return;
  if (st->kind == access_mode::reduce) close_reduction(*st);
  if (sequential_) {
    if (!finished(st->last)) run_sequential(st->last.node);
    return;
  }
  // A barrier task after every access to the object so far; it is not an
  // access itself, so later tasks do not wait for it.
  latch reached;
  flow_node* b = allocate_internal();
  b->barrier = &reached;
  record* rec = start_record(b, "wait");
  scratch_.clear();
  ++mark_;
  for (const node_ref& r : st->current) add_predecessor(b, r, object, access_mode::read, rec);
  count_unfinished(1);
  link_and_release(b, nullptr, 0);
  if (scheduler::on_worker_of(*pool_)) {
    help_towards(b, reached);
  } else {
    scheduler::await(*pool_, reached);
  }
}

// On a worker: runs the barrier's unfinished ancestors that are queued
// (claiming them from their queue entries), and nothing else, until the
// barrier is reached.
void flow_core::help_towards(flow_node* barrier, const latch& reached) {
  backoff wait;
  std::vector<flow_node*> stack;
  while (!reached.is_set()) {
    bool ran = false;
    flow_node* on_future = nullptr;  // an ancestor that waits for a future
    // Claims and runs n if it is queued; walks on to its predecessors if it
    // still waits for them.
    auto visit = [&](const node_ref& r) {
      if (ran || r.node->generation != r.generation || r.node->mark == mark_) return;
      r.node->mark = mark_;
      // Acquire: see finished().
      std::uint8_t phase = r.node->phase.load(std::memory_order_acquire);
      if (phase == flow_node::queued &&
          r.node->phase.compare_exchange_strong(
              phase, flow_node::running, std::memory_order_acquire, std::memory_order_relaxed)) {
        const running_scope running{pool_, epoch_};
        r.node->stale_entry = true;     // its queue entry is still out there
        execute(r.node, false, false);  // queues its ready successors
        ran = true;
      } else if (phase == flow_node::waiting) {
        if (r.node->waits_for_future && on_future == nullptr) on_future = r.node;
        stack.push_back(r.node);
      }
    };
    ++mark_;
    stack.clear();
    visit(node_ref{barrier, barrier->generation});
    while (!stack.empty() && !ran) {
      const flow_node* n = stack.back();
      stack.pop_back();
      for (std::uint32_t i = 0; i < n->predecessor_count; ++i) visit(n->predecessors[i]);
      for (const node_ref& r : n->more_predecessors) visit(r);
    }
    if (ran) {
      wait.reset();
    } else if (on_future != nullptr) {
      // The future's job may sit in this very worker's queue: run jobs of
      // the pool (any of them) until that task is ready or x is.
      auto unblocked = [&] {
        // Acquire: see finished().
        return reached.is_set() || on_future->pending.load(std::memory_order_acquire) == 0;
      };
      scheduler::wait_for(*pool_, unblocked, [&] {
        while (!unblocked()) wait.pause();
      });
      wait.reset();
    } else {
      wait.pause();
    }
  }
}

}  // namespace weft::detail
