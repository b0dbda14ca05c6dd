// Skynet (issue 43): a tree in which every inner node forks ten children
// and sums what they return. Node `num` at depth d has the children
// num * 10 + i, i = 0 .. 9, at depth d + 1; the nodes at the last depth
// are the leaves and return their own number, so the leaves are numbered
// 0 .. 10^levels - 1 and the root returns their sum. Every node, leaves
// included, is a task of its own and does no work beyond the addition:
// like fib, the time is that of creating, scheduling and joining tasks,
// but ten at a time from one parent instead of two.
//
// Sizes: 10^6 leaves (6 levels below the root, 1,111,110 tasks) and 10^7
// (7 levels, 11,111,110 tasks).
//
// Every result is checked against the closed form 10^k (10^k - 1) / 2.
//
// Name: "skynet/<leaves>/<variant>" (real time).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/check.hpp"
#include "common/registry.hpp"

namespace bench::skynet {

inline constexpr std::int64_t sizes[] = {1'000'000, 10'000'000};
inline constexpr int children = 10;

// The levels below the root of a tree of `leaves` leaves (a power of 10).
constexpr int levels_of(std::int64_t leaves) noexcept {
  int levels = 0;
  for (std::int64_t n = 1; n < leaves; n *= children) ++levels;
  return levels;
}
static_assert(levels_of(1'000'000) == 6 && levels_of(10'000'000) == 7);

// What the root of a tree of `leaves` leaves must return: 0 + 1 + ... +
// (leaves - 1).
constexpr std::int64_t expected_sum(std::int64_t leaves) noexcept {
  return leaves * (leaves - 1) / 2;
}
static_assert(expected_sum(10'000'000) == 49'999'995'000'000);

// The subtree of node `num` with `levels` levels below it. `fan(count,
// child)` runs child(0) .. child(count - 1) (each returns the std::int64_t
// sum of one child's subtree) with the competitor's fork-join and returns
// the sum of their results; count is always `children` here.
template <class Fan>
std::int64_t node(std::int64_t num, int levels, const Fan& fan) {
  if (levels == 0) return num;
  return fan(children,
             [num, levels, &fan](int i) { return node(num * children + i, levels - 1, fan); });
}

// `setup()` prepares one benchmark run (starts a pool, an arena) and returns
// a callable `std::int64_t(int levels)` that returns node(0, levels, ...)
// computed with it; the setup is not timed. Registers
// skynet/<leaves>/<variant> for every size.
template <class Setup>
void add_timing(std::string_view variant, Setup setup) {
  for (const std::int64_t leaves : sizes) {
    add("skynet", std::to_string(leaves), variant,
        [setup, leaves](benchmark::State& state) {
          const std::string what = "skynet(" + std::to_string(leaves) + ")";
          auto run = setup();
          // Read anew at every iteration, so that no tree is folded at
          // compile time or computed once for all iterations. Not
          // benchmark::DoNotOptimize on a local: GCC 12 at -O3 dropped the
          // store before it ("+m,r"), and nqueens got a garbage size.
          const volatile int levels = levels_of(leaves);
          for (auto _ : state) {
            if (!check_equal(state, run(levels), expected_sum(leaves), what)) break;
          }
        })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(bench::min_time)
        ->MinWarmUpTime(bench::warm_up)
        ->UseRealTime();
  }
}

}  // namespace bench::skynet
