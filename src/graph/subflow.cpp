// A subflow task's graph (docs/graph.md, "Subflows"): its slot, and the
// child graph's start when the task's callable returns. The child's end,
// on the node-execution path, is in src/graph/run.cpp.
#include <atomic>
#include <cstddef>
#include <memory>

#include "internal.hpp"
#include "weft/graph.hpp"

namespace weft::detail {

void graph_core::make_subflow_slot(graph_node* n) {
  if (subflows_.size() <= n->index) subflows_.resize(n->index + 1);
  if (!subflows_[n->index]) subflows_[n->index] = std::make_unique<subflow_slot>(n);
}

subflow& begin_subflow(graph_node* n) { return graph_core::begin_subflow_of(n); }
std::size_t end_subflow(graph_node* n) { return graph_core::end_subflow_of(n); }

subflow& graph_core::begin_subflow_of(graph_node* n) {
  subflow& sf = n->owner->subflows_[n->index]->flow;
  // What the task's last execution built is gone: its run has ended (the
  // task's successors, or its parent run, waited for it; a later execution
  // in the same run of a detached one waits here, in the graph's destructor).
  if (!sf.graph_.empty()) sf.graph_ = graph{};
  sf.detached_ = false;
  return sf;
}

std::size_t graph_core::end_subflow_of(graph_node* n) {
  graph_core& g = *n->owner;
  subflow_slot& slot = *g.subflows_[n->index];
  if (slot.flow.graph_.empty()) return no_choice;  // nothing to wait for
  graph_core& child = *slot.flow.graph_.core_;
  const bool detached = slot.flow.detached_;
  child.parent_ = &g;
  child.parent_node_ = n;
  child.detached_ = detached;
  if (detached) {
    // The parent run waits for the child: one more unit, which the child's
    // end retires. Relaxed: this task holds a unit, so the count cannot
    // reach zero meanwhile; the child's end is published by the pushes.
    g.in_flight_.fetch_add(1, std::memory_order_relaxed);
  } else {
    // Relaxed: published to the child's end by the pushes of its sources.
    slot.arrivals.store(2, std::memory_order_relaxed);
  }
  run_state* s = nullptr;
  try {
    s = child.start(*g.pool_);
  } catch (...) {
    // A cycle in the child, or no memory: the task fails, and the child
    // never ran. Relaxed: as above.
    if (detached) g.in_flight_.fetch_sub(1, std::memory_order_relaxed);
    throw;
  }
  // No future is kept: the child's outcome goes to the parent run.
  release_state(s);
  return detached ? no_choice : subflow_choice;
}

}  // namespace weft::detail
