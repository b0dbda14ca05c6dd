// Binary tree: weft::graph on a pool of 2 workers, built and run per
// iteration.
#include <memory>
#include <vector>
#include <weft/weft.hpp>

#include "binary_tree/binary_tree.hpp"

namespace {

using bench::binary_tree::tasks;

auto setup() {
  auto pool = std::make_unique<weft::pool>(weft::pool_options{.threads = bench::workers});
  return [pool = std::move(pool)](bench::binary_tree::marks& m) {
    weft::graph g;
    g.reserve(tasks);
    std::vector<weft::task> t(tasks);
    for (std::size_t i = 0; i < tasks; ++i) {
      t[i] = g.emplace([&m, i] { m.mark(i); });
      if (i > 0) t[(i - 1) / 2].precede(t[i]);
    }
    pool->run(g).get();
  };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::binary_tree::add("graph", setup); });

}  // namespace
