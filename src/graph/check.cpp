// Checking and inspecting a graph: the cycle check before a run, and
// graph::dump's DOT output.
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "internal.hpp"
#include "weft/graph.hpp"

namespace weft::detail {

namespace {

void write_dot_string(std::ostream& out, std::string_view s) {
  out << '"';
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out << '\\' << c;
    } else if (c == '\n') {
      out << "\\n";
    } else {
      out << c;
    }
  }
  out << '"';
}

}  // namespace

std::string task_label(const graph_node* n) {
  if (const std::string_view name = n->owner->name_of(n); !name.empty()) return std::string{name};
  std::string label(1, '#');
  label += std::to_string(n->index);
  return label;
}

// ---------------------------------------------------------------------------
// graph_core: checking before a run

void graph_core::check_cycles() {
  // Kahn's algorithm over the normal edges: whatever is left has a normal
  // predecessor that is left too, so it is on a cycle or after one.
  const std::size_t n = nodes_.size();
  std::vector<std::uint32_t> remaining_in(n);
  std::vector<graph_node*> ready;
  nodes_.for_each([&](graph_node* node) {
    remaining_in[node->index] = node->strong;
    if (node->strong == 0) ready.push_back(node);
  });
  std::size_t ordered = 0;
  while (!ready.empty()) {
    graph_node* node = ready.back();
    ready.pop_back();
    ++ordered;
    if (chooses(node->kind)) continue;
    for (graph_node* s : node->successors) {
      if (--remaining_in[s->index] == 0) ready.push_back(s);
    }
  }
  if (ordered != n) report_cycle(remaining_in);
}

void graph_core::report_cycle(const std::vector<std::uint32_t>& remaining_in) {
  // Each task left over has a normal predecessor left over: walking from
  // predecessor to predecessor must come back to a task already seen.
  std::vector<graph_node*> pred(remaining_in.size(), nullptr);
  graph_node* start = nullptr;
  nodes_.for_each([&](graph_node* node) {
    if (remaining_in[node->index] == 0 || chooses(node->kind)) return;
    for (graph_node* s : node->successors) {
      if (remaining_in[s->index] != 0) pred[s->index] = node;
    }
  });
  nodes_.for_each([&](graph_node* node) {
    if (start == nullptr && remaining_in[node->index] != 0) start = node;
  });
  std::vector<std::size_t> seen_at(remaining_in.size(), static_cast<std::size_t>(-1));
  std::vector<graph_node*> walk;
  graph_node* at = start;
  while (seen_at[at->index] == static_cast<std::size_t>(-1)) {
    seen_at[at->index] = walk.size();
    walk.push_back(at);
    at = pred[at->index];
  }
  // walk[seen_at[at]..] is the cycle, backwards.
  std::vector<graph_node*> cycle(walk.begin() + static_cast<std::ptrdiff_t>(seen_at[at->index]),
                                 walk.end());
  std::reverse(cycle.begin(), cycle.end());
  // Start from the task added first, so the report does not depend on the walk.
  std::rotate(cycle.begin(),
              std::min_element(
                  cycle.begin(), cycle.end(),
                  [](const graph_node* x, const graph_node* y) { return x->index < y->index; }),
              cycle.end());
  std::string path;
  for (const graph_node* node : cycle) path += task_label(node) + " -> ";
  path += task_label(cycle.front());
  throw graph_error("weft::graph: cycle among normal edges: " + path +
                    "; remove an edge, or make the loop go through a condition task");
}

void detail::graph_core::dump(std::ostream& out) const {
  out << "digraph weft {\n";
  nodes_.for_each([&](const graph_node* n) {
    out << "  t" << n->index << " [label=";
    write_dot_string(out, task_label(n));
    switch (n->kind) {
      case node_kind::condition:
        out << ", shape=diamond";
        break;
      case node_kind::multi_condition:
        out << ", shape=diamond, peripheries=2";
        break;
      case node_kind::placeholder:
        out << ", shape=box, style=dashed";
        break;
      case node_kind::module:
        out << ", shape=box, peripheries=2";
        break;
      case node_kind::subflow:
        out << ", shape=box3d";
        break;
      case node_kind::work:
        break;
    }
    out << "];\n";
  });
  nodes_.for_each([&](const graph_node* n) {
    std::uint32_t i = 0;
    for (const graph_node* s : n->successors) {
      out << "  t" << n->index << " -> t" << s->index;
      if (chooses(n->kind)) out << " [style=dashed, label=\"" << i << "\"]";
      out << ";\n";
      ++i;
    }
  });
  out << "}\n";
}

}  // namespace weft::detail
