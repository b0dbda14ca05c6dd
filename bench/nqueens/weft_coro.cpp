// N-queens: weft coroutines (weft::coro, docs/coroutines.md), on a pool of
// 2 workers.
//   coro   every board a coro; its children (one per free square) are
//          joined by halves, weft::join of two coros per split
// The search is nqueens.hpp's (board, free(), place()); a coroutine cannot
// use its synchronous fan, so the recursion is written out here.
#include <array>
#include <cstdint>
#include <memory>
#include <weft/weft.hpp>

#include "nqueens/nqueens.hpp"

namespace {

using bench::nqueens::board;
using choice_array = std::array<std::uint32_t, bench::nqueens::max_n>;

weft::coro<std::int64_t> complete_coro(board b);

// The solutions below choices [lo, hi) of b. b and choices live in the
// frame of the complete_coro that awaits this.
weft::coro<std::int64_t> split(const board& b, const choice_array& choices, int lo, int hi) {
  if (hi - lo == 1)
    co_return co_await complete_coro(b.place(choices[static_cast<std::size_t>(lo)]));
  const int mid = lo + (hi - lo) / 2;
  auto [x, y] = co_await weft::join(split(b, choices, lo, mid), split(b, choices, mid, hi));
  co_return x + y;
}

weft::coro<std::int64_t> complete_coro(board b) {
  if (b.row == b.n) co_return 1;
  choice_array choices;
  int count = 0;
  for (std::uint32_t free = b.free(); free != 0; free &= free - 1) {
    choices[static_cast<std::size_t>(count++)] = free & (~free + 1);
  }
  if (count == 0) co_return 0;
  co_return co_await split(b, choices, 0, count);
}

auto setup_coro() {
  return
      [pool = std::make_unique<weft::pool>(weft::pool_options{.threads = bench::workers})](int n) {
        return weft::sync_wait(*pool, complete_coro(bench::nqueens::empty_board(n)));
      };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::nqueens::add_timing("coro", setup_coro); });

}  // namespace
