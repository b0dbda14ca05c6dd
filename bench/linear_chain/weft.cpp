// Linear chain: weft::graph on a pool of 2 workers; the caller builds the
// graph, runs it and blocks in get().
#include <memory>
#include <weft/weft.hpp>

#include "linear_chain/linear_chain.hpp"

namespace {

std::unique_ptr<weft::pool> make_pool() {
  return std::make_unique<weft::pool>(weft::pool_options{.threads = bench::workers});
}

void build(weft::graph& g, std::int64_t n, std::int64_t& counter) {
  g.reserve(static_cast<std::size_t>(n));
  weft::task prev = g.emplace([&counter] { ++counter; });
  for (std::int64_t i = 1; i < n; ++i) {
    weft::task next = g.emplace([&counter] { ++counter; });
    prev.precede(next);
    prev = next;
  }
}

auto setup_build_run(std::int64_t n) {
  return [pool = make_pool(), n] {
    std::int64_t counter = 0;
    weft::graph g;
    build(g, n, counter);
    pool->run(g).get();
    return counter;
  };
}

auto setup_run(std::int64_t n, std::int64_t& counter) {
  auto g = std::make_unique<weft::graph>();
  build(*g, n, counter);
  return [pool = make_pool(), g = std::move(g)] { pool->run(*g).get(); };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::linear_chain::add_build_run("graph", setup_build_run);
  bench::linear_chain::add_run("graph", setup_run);
});

}  // namespace
