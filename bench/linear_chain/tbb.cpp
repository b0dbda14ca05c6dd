// Linear chain: oneTBB flow graph, a continue_node per task joined by
// make_edge, started with try_put and awaited with wait_for_all, inside a
// task_arena of 2 threads.
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>

#include <memory>
#include <vector>

#include "linear_chain/linear_chain.hpp"

namespace {

namespace flow = tbb::flow;
using node = flow::continue_node<flow::continue_msg>;

struct chain {
  flow::graph g;
  std::vector<std::unique_ptr<node>> nodes;

  chain(std::int64_t n, std::int64_t& counter) {
    nodes.reserve(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      nodes.push_back(
          std::make_unique<node>(g, [&counter](const flow::continue_msg&) { ++counter; }));
      if (i > 0) flow::make_edge(*nodes[static_cast<std::size_t>(i - 1)], *nodes.back());
    }
  }

  void run() {
    nodes.front()->try_put(flow::continue_msg());
    g.wait_for_all();
  }
};

std::shared_ptr<tbb::task_arena> make_arena() {
  auto arena = std::make_shared<tbb::task_arena>(bench::workers);
  arena->initialize();
  return arena;
}

auto setup_build_run(std::int64_t n) {
  return [arena = make_arena(), n] {
    std::int64_t counter = 0;
    arena->execute([&] {
      chain c(n, counter);
      c.run();
    });
    return counter;
  };
}

auto setup_run(std::int64_t n, std::int64_t& counter) {
  auto arena = make_arena();
  std::shared_ptr<chain> c;
  arena->execute([&] { c = std::make_shared<chain>(n, counter); });
  return [arena, c] { arena->execute([&] { c->run(); }); };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::linear_chain::add_build_run("flow_graph", setup_build_run);
  bench::linear_chain::add_run("flow_graph", setup_run);
});

}  // namespace
