// Results in order (issue 9, seed 002, the Haskell scheduler's benchmarks):
// its `replicate` (the same computation k times, results collected in
// order) and `map` (a function over a list, results in order), each with
// its two functions, Fib and Sum, at the seed's sizes.
//
//   collect/replicate_fib_1000x10000  1,000 jobs, each fib(10000)
//   collect/replicate_sum_1000x1000   1,000 jobs, each the sum of a list of 1,000
//   collect/map_fib_2000              fib(i) for i in [0, 2000)
//   collect/map_sum_2000              the sum of list i for i in [0, 2000), list i
//                                     holding 0, 1, ..., i (2 million elements)
//
// fib(n) is the iterative one, modulo 2^64 (the seed's is over Haskell's
// unbounded Integer, whose additions cost more as the numbers grow; the
// shape, many small independent jobs of about 10 us, is the same).
//
// Name: "collect/<size>/<variant>" (real time for all the jobs, results
// gathered in order into a std::vector). Every run compares the whole
// vector with the sequential one.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/check.hpp"
#include "common/registry.hpp"

namespace bench::collect {

using value = std::uint64_t;
using results = std::vector<value>;

inline constexpr std::size_t replicate_jobs = 1000;
inline constexpr std::uint64_t replicate_fib_n = 10'000;
inline constexpr std::size_t replicate_sum_length = 1000;
inline constexpr std::size_t map_n = 2000;

// fib(n) modulo 2^64, by iteration: n dependent additions. DoNotOptimize
// makes both functions opaque to the optimiser (not pure), so that a loop of
// identical calls is not folded into one. Both start on a cache line: their
// loops are the whole time of a row, and where the library's code moved
// them decided up to 8% of it (collect/map_fib_2000/map at 32 against 0
// bytes past a 64-byte boundary).
[[gnu::noinline, gnu::aligned(64)]] inline value fib(std::uint64_t n) noexcept {
  benchmark::DoNotOptimize(n);
  value a = 0;
  value b = 1;
  for (std::uint64_t i = 0; i < n; ++i) {
    const value next = a + b;
    a = b;
    b = next;
  }
  return a;
}

[[gnu::noinline, gnu::aligned(64)]] inline value sum(const std::vector<value>& xs) noexcept {
  benchmark::DoNotOptimize(xs.data());
  value s = 0;
  for (const value x : xs) s += x;
  return s;
}

// replicate/Sum's list: 1, 2, ..., 1000.
inline const std::vector<value>& sum_list() {
  static const std::vector<value> list = [] {
    std::vector<value> v(replicate_sum_length);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = i + 1;
    return v;
  }();
  return list;
}

// map/Fib's input: 0, 1, ..., 1999.
inline const std::vector<std::uint64_t>& fib_inputs() {
  static const std::vector<std::uint64_t> inputs = [] {
    std::vector<std::uint64_t> v(map_n);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = i;
    return v;
  }();
  return inputs;
}

// map/Sum's input: list i holds 0, 1, ..., i.
inline const std::vector<std::vector<value>>& sum_lists() {
  static const std::vector<std::vector<value>> lists = [] {
    std::vector<std::vector<value>> v(map_n);
    for (std::size_t i = 0; i < v.size(); ++i) {
      v[i].resize(i + 1);
      for (std::size_t j = 0; j <= i; ++j) v[i][j] = j;
    }
    return v;
  }();
  return lists;
}

// The sequential results every run is compared with.
inline results expected_replicate_fib() { return results(replicate_jobs, fib(replicate_fib_n)); }
inline results expected_replicate_sum() { return results(replicate_jobs, sum(sum_list())); }
inline results expected_map_fib() {
  results r;
  for (const std::uint64_t n : fib_inputs()) r.push_back(fib(n));
  return r;
}
inline results expected_map_sum() {
  results r;
  for (const std::vector<value>& xs : sum_lists()) r.push_back(sum(xs));
  return r;
}

// Registers one size: `setup()` prepares a run (a pool, an arena) and
// returns the callable `results()` that computes the whole vector once.
template <class Setup>
void add(std::string_view size, std::string_view variant, results (*expected)(), Setup setup) {
  bench::add("collect", size, variant,
             [setup, expected](benchmark::State& state) {
               const results want = expected();
               auto run = setup();
               for (auto _ : state) {
                 const results got = run();
                 if (!check(state, got == want, "results, in order")) break;
               }
             })
      ->Unit(benchmark::kMillisecond)
      ->MinTime(bench::min_time)
      ->MinWarmUpTime(bench::warm_up)
      ->UseRealTime();
}

template <class Setup>
void add_replicate_fib(std::string_view variant, Setup setup) {
  add("replicate_fib_1000x10000", variant, &expected_replicate_fib, setup);
}
template <class Setup>
void add_replicate_sum(std::string_view variant, Setup setup) {
  add("replicate_sum_1000x1000", variant, &expected_replicate_sum, setup);
}
template <class Setup>
void add_map_fib(std::string_view variant, Setup setup) {
  add("map_fib_2000", variant, &expected_map_fib, setup);
}
template <class Setup>
void add_map_sum(std::string_view variant, Setup setup) {
  add("map_sum_2000", variant, &expected_map_sum, setup);
}

}  // namespace bench::collect
