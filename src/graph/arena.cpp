// The graph's node arena (graph_core::nodes_): chunks of nodes, the large
// ones backed by huge pages where the platform allows it (platform.hpp).
#include <algorithm>
#include <cstdlib>
#include <new>

#include "weft/detail/platform.hpp"
#include "weft/graph.hpp"

namespace weft::detail {

// ---------------------------------------------------------------------------
// node_arena

node_arena::~node_arena() {
  if (destroy_nodes_) for_each([](graph_node* n) { n->~graph_node(); });
  for (const chunk& c : chunks_) platform::aligned_free(c.first);
}

void node_arena::grow(std::size_t at_least) {
  constexpr std::size_t first_chunk = 64;
  constexpr std::size_t largest_chunk = 65536;
  std::size_t n =
      chunks_.empty() ? first_chunk : std::min(chunks_.back().capacity * 2, largest_chunk);
  n = std::max(n, at_least);
  chunks_.reserve(chunks_.size() + 1);
  // Big chunks are aligned to, and asked to be backed by, 2 MiB pages: a
  // graph of millions of tasks then costs a few hundred page faults instead
  // of hundreds of thousands (where the kernel allows it).
  constexpr std::size_t huge_page = std::size_t{2} << 20;
  std::size_t bytes = n * sizeof(graph_node);
  const std::size_t alignment = bytes >= huge_page ? huge_page : cache_line;
  bytes = (bytes + alignment - 1) / alignment * alignment;
  void* memory = platform::aligned_allocate(alignment, bytes, alignment == huge_page);
  if (memory == nullptr) throw std::bad_alloc();
  auto* first = static_cast<graph_node*>(memory);
  if (!chunks_.empty()) {
    chunks_.back().used = static_cast<std::size_t>(next_ - chunks_.back().first);
  }
  chunks_.push_back(chunk{first, n, 0});
  next_ = first;
  end_ = first + n;
}

}  // namespace weft::detail
