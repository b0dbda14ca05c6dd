// Private to src/graph/: what the graph's translation units share beyond
// include/weft/graph.hpp (a subflow task's state, the run states' release,
// task labels for messages).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "weft/graph.hpp"

namespace weft::detail {

inline void destroy_state(future_state<void>* s) noexcept { delete static_cast<run_state*>(s); }

// Lets go of the graph's reference to a run state it no longer uses.
inline void release_state(run_state* s) noexcept {
  if (s == nullptr || !s->drop()) return;
  // Last owner: the run has finished and its future is gone. An error that
  // nobody took can only be printed now.
  if (s->error) report_unretrieved(s->error);
  destroy_state(s);
}

// A task's name, or "#index" (src/graph/check.cpp).
std::string task_label(const graph_node* n);

// A subflow task's own state: the child graph its callable builds, and the
// job that releases the task's successors once the child has finished
// (queued by the child's run, so no worker waits for it).
struct subflow_slot : job {
  explicit subflow_slot(graph_node* n) noexcept : job{&graph_core::resume_subflow}, node(n) {}
  subflow flow;
  graph_node* const node;
  // Of a joined subflow: the task's return and the child's end, each
  // counting one off; whoever comes second releases the successors.
  std::atomic<std::uint32_t> arrivals{0};
};

}  // namespace weft::detail
