// Unbalanced recursion (issue 13): a fork-join over a range of `size` units
// in which every split gives the left half size - size / 6 units (5/6) and
// the right half size / 6 (1/6), down to leaves of at most leaf_size units.
// Each leaf sums a splitmix64 hash of its units' indices: light work, a few
// nanoseconds a unit, that no compiler can fold into a formula. Each split
// is five parts to one, so handing each worker one half of a node leaves one
// idle long before the other: only stealing keeps both busy.
//
// Why 5/6 against 1/6 makes the left side ten times deeper: d levels down
// the left spine a node holds size x (5/6)^d units, d levels down the right
// spine size x (1/6)^d. A spine ends once its node holds leaf_size units or
// fewer, after log(size / leaf_size) / log(6/5) levels on the left and
// log(size / leaf_size) / log(6) on the right: a ratio of
// log(6) / log(6/5) = 9.8 whatever the size. Every subtree has the same
// shape, so the imbalance recurs at every level.
//
// Sizes: 2^22 units, a few milliseconds of sequential work. Leaves of up to
// 256 units (121 on average, about 0.25 us of work) make 34,512 forks (two
// tasks each), 54 levels down the left spine against 6 down the right one.
// With leaves of 32 the 298,624 forks would cost more than the work and the
// time would measure the cost of a spawn, which fib already does, rather
// than how evenly stealing spreads the work.
//
// Every result is checked against the sum of the hashes of 0 .. size - 1
// computed by a plain loop (the sum wraps modulo 2^64, so any order of
// addition gives it).
//
// Name: "unbalanced_tree/<size>/<variant>" (real time).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/check.hpp"
#include "common/registry.hpp"

namespace bench::unbalanced_tree {

inline constexpr std::int64_t sizes[] = {std::int64_t{1} << 22};
inline constexpr std::int64_t leaf_size = 256;

// One unit of work: splitmix64's output function applied to the unit's index.
inline std::uint64_t unit(std::uint64_t i) noexcept {
  std::uint64_t z = i + 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

// The hashes of begin .. begin + size - 1, summed.
inline std::uint64_t leaf(std::int64_t begin, std::int64_t size) noexcept {
  std::uint64_t sum = 0;
  for (std::int64_t i = begin; i < begin + size; ++i) sum += unit(static_cast<std::uint64_t>(i));
  return sum;
}

// The tree over begin .. begin + size - 1. `fork(f, g)` runs f() and g()
// (each returns the sum of its subtree, a std::uint64_t) with the
// competitor's fork-join and returns f() + g().
template <class Fork>
std::uint64_t tree(std::int64_t begin, std::int64_t size, const Fork& fork) {
  if (size <= leaf_size) return leaf(begin, size);
  const std::int64_t left = size - size / 6;
  return fork([begin, left, &fork] { return tree(begin, left, fork); },
              [begin, left, size, &fork] { return tree(begin + left, size - left, fork); });
}

// What every tree of `size` must sum to.
inline std::uint64_t expected_sum(std::int64_t size) noexcept {
  std::int64_t begin = 0;
  benchmark::DoNotOptimize(begin);  // not folded at compile time
  return leaf(begin, size);
}

// `setup()` prepares one benchmark run (starts a pool, an arena) and returns
// a callable `std::uint64_t(std::int64_t size)` that runs tree(0, size, ...)
// with it; the setup is not timed. Registers unbalanced_tree/<size>/<variant>
// for every size.
template <class Setup>
void add_timing(std::string_view variant, Setup setup) {
  for (const std::int64_t size : sizes) {
    add("unbalanced_tree", std::to_string(size), variant,
        [setup, size](benchmark::State& state) {
          const std::uint64_t expected = expected_sum(size);
          const std::string what = "unbalanced tree of " + std::to_string(size);
          auto run = setup();
          for (auto _ : state) {
            const std::uint64_t sum = run(size);
            // Compared as the same 64 bits, signed.
            if (!check_equal(state, static_cast<std::int64_t>(sum),
                             static_cast<std::int64_t>(expected), what)) {
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

}  // namespace bench::unbalanced_tree
