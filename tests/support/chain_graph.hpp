// A graph for tests of repeated and queued runs (run_n, run_until, pool.run
// on a running graph).
#pragma once

#include <atomic>
#include <weft/graph.hpp>

namespace weft::test {

// A chain a -> b -> c that increments a plain counter three times per run:
// two runs at once would race on it (ThreadSanitizer) and lose increments.
struct chain_graph {
  weft::graph g;
  long plain = 0;
  std::atomic<int> runs{0};
  chain_graph() {
    auto a = g.emplace([this] { ++plain; });
    auto b = g.emplace([this] { ++plain; });
    auto c = g.emplace([this] {
      ++plain;
      runs.fetch_add(1, std::memory_order_relaxed);
    });
    a.precede(b);
    b.precede(c);
  }
};

}  // namespace weft::test
