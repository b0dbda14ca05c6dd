// Graph rerun: weft, pool.run_n(g, 1000) of a graph built once (graph_rerun.hpp).
#include <memory>
#include <vector>
#include <weft/weft.hpp>

#include "graph_rerun/graph_rerun.hpp"

namespace {

using namespace bench::graph_rerun;

auto setup(counters& c) {
  auto pool = std::make_shared<weft::pool>(weft::pool_options{.threads = bench::workers});
  auto g = std::make_shared<weft::graph>();
  std::vector<weft::task> t;
  t.reserve(tasks);
  for (int k = 0; k < tasks; ++k) t.push_back(g->emplace([&c, k] { ++c.at[k].n; }));
  for (int l = 1; l < layers; ++l) {
    for (int i = 0; i < width; ++i) {
      t[index(l, i)].succeed(t[index(l - 1, i)], t[index(l - 1, (i + 1) % width)]);
    }
  }
  return [pool, g] { pool->run_n(*g, runs).get(); };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::graph_rerun::add("run_n", setup); });

}  // namespace
