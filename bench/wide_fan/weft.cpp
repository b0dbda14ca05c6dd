// Wide fan: weft::graph on a pool of 2 workers, built and run per iteration.
#include <memory>
#include <weft/weft.hpp>

#include "wide_fan/wide_fan.hpp"

namespace {

auto setup() {
  auto pool = std::make_unique<weft::pool>(weft::pool_options{.threads = bench::workers});
  return [pool = std::move(pool)](bench::wide_fan::marks& m) {
    weft::graph g;
    g.reserve(bench::wide_fan::width + 2);
    weft::task source = g.placeholder();
    weft::task sink = g.emplace([&m] { m.count(); });
    for (std::int64_t i = 0; i < bench::wide_fan::width; ++i) {
      weft::task t = g.emplace([&m, i] { m.mark(i); });
      source.precede(t);
      t.precede(sink);
    }
    pool->run(g).get();
  };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::wide_fan::add("graph", setup); });

}  // namespace
