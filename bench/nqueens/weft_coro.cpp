// N-queens: weft coroutines (weft::coro, docs/coroutines.md), on a pool of
// 2 workers.
//   coro   every board a coro; its children (one per free square) are
//          joined by halves, weft::join of two coros per split
// The search is nqueens.hpp's (board, free(), place()), and the forks are
// the join row's (bench/nqueens/weft.cpp): count - 1 joins of two for a
// board with count candidates, [lo, hi) split into [lo, mid) and [mid,
// hi). A coroutine cannot use nqueens.hpp's synchronous fan, so the
// recursion is written out here, with a frame where the join row has a
// join and a board: a half of one candidate is that child board's coro
// itself (the join row calls its complete() there), not a coro that
// awaits it.
#include <array>
#include <cstdint>
#include <memory>
#include <weft/weft.hpp>

#include "nqueens/nqueens.hpp"

namespace {

using bench::nqueens::board;
using choice_array = std::array<std::uint32_t, bench::nqueens::max_n>;

weft::coro<std::int64_t> complete_coro(board b);
weft::coro<std::int64_t> split(const board& b, const choice_array& choices, int lo, int hi);

// The solutions below choices [lo, hi) of b (hi > lo): the child board's
// coro for one candidate, a split of the range for more. b and choices
// live in the frame of the coro that awaits the result.
weft::coro<std::int64_t> half(const board& b, const choice_array& choices, int lo, int hi) {
  if (hi - lo == 1) return complete_coro(b.place(choices[static_cast<std::size_t>(lo)]));
  return split(b, choices, lo, hi);
}

// The same for hi - lo >= 2: one join of the two halves.
weft::coro<std::int64_t> split(const board& b, const choice_array& choices, int lo, int hi) {
  const int mid = lo + (hi - lo) / 2;
  auto [x, y] = co_await weft::join(half(b, choices, lo, mid), half(b, choices, mid, hi));
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
  // The first split's join in this frame, as the join row's first split
  // runs in its complete()'s.
  if (count == 1) co_return co_await complete_coro(b.place(choices[0]));
  const int mid = count / 2;
  auto [x, y] = co_await weft::join(half(b, choices, 0, mid), half(b, choices, mid, count));
  co_return x + y;
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
