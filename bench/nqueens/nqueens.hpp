// N-queens (issue 43): the number of ways to place n queens on an n x n
// board, none attacking another, counted by the usual backtracking search
// one row at a time, the free squares of a row kept as bit masks (columns
// and both diagonals taken by the queens above).
//
// No cutoff: every queen placed is a task, down to the last row. A board
// with `row` queens forks one child per free square of its next row, each
// counting the solutions that complete its own placement, and sums them; a
// board with all n queens returns 1, one with no free square 0. The tree
// is irregular (from 1 to n children, dead ends at every depth) and its
// tasks light, a few bit operations each: the time is mostly that of
// spawning and joining, as in fib and skynet, but over a tree of uneven
// fan-out. Tasks (the nodes of the search below the empty board): 856,188
// for n = 12, 4,674,889 for 13, 27,358,552 for 14.
//
// Every result is checked against the known number of solutions (OEIS
// A000170), a table independent of the search.
//
// Name: "nqueens/<n>/<variant>" (real time).
#pragma once

#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/check.hpp"
#include "common/registry.hpp"

namespace bench::nqueens {

inline constexpr int sizes[] = {12, 13, 14};
inline constexpr int max_n = 14;

// The number of solutions for n = 0 .. max_n (A000170).
inline constexpr std::array<std::int64_t, max_n + 1> solutions = {
    1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596};

// A board with queens on its first `row` rows: the columns and the two
// diagonals they attack in the next row, bit i for column i.
struct board {
  int n;
  int row;
  std::uint32_t columns;
  std::uint32_t left;   // diagonals going down to the left
  std::uint32_t right;  // diagonals going down to the right

  // The columns of row `row` that no queen attacks.
  [[nodiscard]] std::uint32_t free() const noexcept {
    const std::uint32_t all = (std::uint32_t{1} << n) - 1;
    return all & ~(columns | left | right);
  }

  // This board with one more queen, at `column` (a single bit) of row `row`.
  [[nodiscard]] board place(std::uint32_t column) const noexcept {
    return {n, row + 1, columns | column, (left | column) << 1, (right | column) >> 1};
  }
};

// The solutions that complete `b`. `fan(count, child)` runs child(0) ..
// child(count - 1) (each returns the std::int64_t count of solutions below
// one placement in the next row) with the competitor's fork-join and
// returns the sum of their results; count is from 1 to n.
template <class Fan>
std::int64_t complete(const board& b, const Fan& fan) {
  if (b.row == b.n) return 1;
  std::array<std::uint32_t, max_n> choices;  // the free columns, one bit each
  int count = 0;
  for (std::uint32_t free = b.free(); free != 0; free &= free - 1) {
    choices[static_cast<std::size_t>(count++)] = free & (~free + 1);
  }
  if (count == 0) return 0;
  // The children read b and choices in this frame: fan returns only once
  // all of them have.
  return fan(count, [&b, &choices, &fan](int i) {
    return complete(b.place(choices[static_cast<std::size_t>(i)]), fan);
  });
}

// The empty board of n x n.
inline board empty_board(int n) noexcept { return {n, 0, 0, 0, 0}; }

// `setup()` prepares one benchmark run (starts a pool, an arena) and returns
// a callable `std::int64_t(int n)` that returns complete(empty_board(n),
// ...) computed with it; the setup is not timed. Registers
// nqueens/<n>/<variant> for every size.
template <class Setup>
void add_timing(std::string_view variant, Setup setup) {
  for (const int n : sizes) {
    add("nqueens", std::to_string(n), variant,
        [setup, n](benchmark::State& state) {
          const std::string what = "nqueens(" + std::to_string(n) + ")";
          auto run = setup();
          // Read anew at every iteration (see skynet.hpp: not
          // benchmark::DoNotOptimize on a local).
          const volatile int size = n;
          for (auto _ : state) {
            if (!check_equal(state, run(size), solutions[static_cast<std::size_t>(n)], what)) {
              break;
            }
          }
        })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(bench::min_time)
        ->MinWarmUpTime(bench::warm_up)
        ->UseRealTime();
  }
}

}  // namespace bench::nqueens
