// Skynet: weft coroutines (weft::coro, docs/coroutines.md), on a pool of 2
// workers.
//   coro   every node a coro that awaits weft::join of its ten children
// The tree and its numbering are skynet.hpp's (node()); a coroutine cannot
// use its synchronous fan, so the recursion is written out here.
#include <cstdint>
#include <memory>
#include <weft/weft.hpp>

#include "skynet/skynet.hpp"

namespace {

weft::coro<std::int64_t> node_coro(std::int64_t num, int levels) {
  if (levels == 0) co_return num;
  static_assert(bench::skynet::children == 10);
  const std::int64_t c = num * bench::skynet::children;
  const int l = levels - 1;
  auto [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9] = co_await weft::join(
      node_coro(c, l), node_coro(c + 1, l), node_coro(c + 2, l), node_coro(c + 3, l),
      node_coro(c + 4, l), node_coro(c + 5, l), node_coro(c + 6, l), node_coro(c + 7, l),
      node_coro(c + 8, l), node_coro(c + 9, l));
  co_return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9;
}

auto setup_coro() {
  return [pool = std::make_unique<weft::pool>(weft::pool_options{.threads = bench::workers})](
             int levels) { return weft::sync_wait(*pool, node_coro(0, levels)); };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::skynet::add_timing("coro", setup_coro); });

}  // namespace
