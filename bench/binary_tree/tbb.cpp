// Binary tree: oneTBB flow graph of continue_nodes, built and run per
// iteration inside a task_arena of 2 threads.
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>

#include <memory>
#include <vector>

#include "binary_tree/binary_tree.hpp"

namespace {

namespace flow = tbb::flow;
using node = flow::continue_node<flow::continue_msg>;
using bench::binary_tree::tasks;

auto setup() {
  auto arena = std::make_unique<tbb::task_arena>(bench::workers);
  arena->initialize();
  return [arena = std::move(arena)](bench::binary_tree::marks& m) {
    arena->execute([&m] {
      flow::graph g;
      std::vector<std::unique_ptr<node>> t;
      t.reserve(tasks);
      for (std::size_t i = 0; i < tasks; ++i) {
        t.push_back(std::make_unique<node>(g, [&m, i](const flow::continue_msg&) { m.mark(i); }));
        if (i > 0) flow::make_edge(*t[(i - 1) / 2], *t.back());
      }
      t.front()->try_put(flow::continue_msg());
      g.wait_for_all();
    });
  };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::binary_tree::add("flow_graph", setup); });

}  // namespace
