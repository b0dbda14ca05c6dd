// Matrix multiplication: oneTBB flow graph (per-row init nodes, a join node,
// per-row multiply nodes), built and run per iteration in a task_arena of 2.
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>

#include <memory>
#include <vector>

#include "matmul/matmul.hpp"

namespace {

namespace flow = tbb::flow;
using node = flow::continue_node<flow::continue_msg>;

auto setup(bench::matmul::matrices& m) {
  auto arena = std::make_unique<tbb::task_arena>(bench::workers);
  arena->initialize();
  return [arena = std::move(arena), &m] {
    arena->execute([&m] {
      flow::graph g;
      flow::broadcast_node<flow::continue_msg> start(g);
      node join(g, [](const flow::continue_msg&) {});
      std::vector<std::unique_ptr<node>> nodes;
      nodes.reserve(2 * m.n);
      for (std::size_t i = 0; i < m.n; ++i) {
        nodes.push_back(
            std::make_unique<node>(g, [&m, i](const flow::continue_msg&) { m.init_row(i); }));
        flow::make_edge(start, *nodes.back());
        flow::make_edge(*nodes.back(), join);
        nodes.push_back(
            std::make_unique<node>(g, [&m, i](const flow::continue_msg&) { m.multiply_row(i); }));
        flow::make_edge(join, *nodes.back());
      }
      start.try_put(flow::continue_msg());
      g.wait_for_all();
    });
  };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::matmul::add("flow_graph", setup); });

}  // namespace
