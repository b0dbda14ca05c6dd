// Graph rerun: oneTBB, a flow::graph of continue_nodes behind a
// broadcast_node, started with try_put and awaited with wait_for_all 1,000
// times inside a task_arena of bench::workers threads (graph_rerun.hpp).
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>

#include <memory>
#include <vector>

#include "graph_rerun/graph_rerun.hpp"

namespace {

using namespace bench::graph_rerun;
namespace flow = tbb::flow;
using node = flow::continue_node<flow::continue_msg>;

struct layered {
  flow::graph g;
  flow::broadcast_node<flow::continue_msg> start{g};
  std::vector<std::unique_ptr<node>> nodes;

  explicit layered(counters& c) {
    nodes.reserve(tasks);
    for (int k = 0; k < tasks; ++k) {
      nodes.push_back(
          std::make_unique<node>(g, [&c, k](const flow::continue_msg&) { ++c.at[k].n; }));
    }
    for (int i = 0; i < width; ++i) flow::make_edge(start, *nodes[index(0, i)]);
    for (int l = 1; l < layers; ++l) {
      for (int i = 0; i < width; ++i) {
        flow::make_edge(*nodes[index(l - 1, i)], *nodes[index(l, i)]);
        flow::make_edge(*nodes[index(l - 1, (i + 1) % width)], *nodes[index(l, i)]);
      }
    }
  }
};

auto setup(counters& c) {
  auto arena = std::make_shared<tbb::task_arena>(bench::workers);
  arena->initialize();
  std::shared_ptr<layered> graph;
  arena->execute([&] { graph = std::make_shared<layered>(c); });
  return [arena, graph] {
    arena->execute([&] {
      for (int r = 0; r < runs; ++r) {
        graph->start.try_put(flow::continue_msg());
        graph->g.wait_for_all();
      }
    });
  };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::graph_rerun::add("flow_graph", setup); });

}  // namespace
