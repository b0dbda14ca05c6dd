// Wide fan: oneTBB flow graph of continue_nodes, built and run per
// iteration inside a task_arena of 2 threads.
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>

#include <memory>
#include <vector>

#include "wide_fan/wide_fan.hpp"

namespace {

namespace flow = tbb::flow;
using node = flow::continue_node<flow::continue_msg>;

auto setup() {
  auto arena = std::make_unique<tbb::task_arena>(bench::workers);
  arena->initialize();
  return [arena = std::move(arena)](bench::wide_fan::marks& m) {
    arena->execute([&m] {
      flow::graph g;
      node source(g, [](const flow::continue_msg&) {});
      node sink(g, [&m](const flow::continue_msg&) { m.count(); });
      std::vector<std::unique_ptr<node>> middle;
      middle.reserve(bench::wide_fan::width);
      for (std::int64_t i = 0; i < bench::wide_fan::width; ++i) {
        middle.push_back(
            std::make_unique<node>(g, [&m, i](const flow::continue_msg&) { m.mark(i); }));
        flow::make_edge(source, *middle.back());
        flow::make_edge(*middle.back(), sink);
      }
      source.try_put(flow::continue_msg());
      g.wait_for_all();
    });
  };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::wide_fan::add("flow_graph", setup); });

}  // namespace
