// Graph rerun, sequential baseline: the 100 tasks called in layer order
// (a topological order), 1,000 times (graph_rerun.hpp).
#include "graph_rerun/graph_rerun.hpp"

namespace {

using namespace bench::graph_rerun;

auto setup(counters& c) {
  return [&c] {
    for (int r = 0; r < runs; ++r) {
      for (int k = 0; k < tasks; ++k) {
        ++c.at[k].n;
        benchmark::ClobberMemory();
      }
    }
  };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::graph_rerun::add("loop", setup); });

}  // namespace
