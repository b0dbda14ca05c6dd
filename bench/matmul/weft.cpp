// Matrix multiplication: weft::graph on a pool of 2 workers: per-row init
// tasks, a join, per-row multiply tasks; built and run per iteration.
#include <memory>
#include <weft/weft.hpp>

#include "matmul/matmul.hpp"

namespace {

auto setup(bench::matmul::matrices& m) {
  auto pool = std::make_unique<weft::pool>(weft::pool_options{.threads = bench::workers});
  return [pool = std::move(pool), &m] {
    weft::graph g;
    g.reserve(2 * m.n + 1);
    weft::task join = g.placeholder().name("join");
    for (std::size_t i = 0; i < m.n; ++i) {
      g.emplace([&m, i] { m.init_row(i); }).precede(join);
      join.precede(g.emplace([&m, i] { m.multiply_row(i); }));
    }
    pool->run(g).get();
  };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::matmul::add("graph", setup); });

}  // namespace
