// Parallel loops: the four loops of issue 9, each verified.
//
//   parallel_loops/sum_1e8         the sum of 10^8 doubles (small integers, so
//                                  the sum is exact in any order)
//   parallel_loops/balanced_1e7    x += 1 on each of 10^7 doubles
//   parallel_loops/balanced_1e5    the same on 10^5 doubles (in cache: the
//                                  cost of starting and ending a call)
//   parallel_loops/unbalanced_1e4  element i runs i steps of an LCG: the last
//                                  elements cost the most
//   parallel_loops/slow_1000       1,000 elements of about 10 us each (busy)
//
// Name: "parallel_loops/<loop>/<variant>" (real time per whole loop).
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/check.hpp"
#include "common/registry.hpp"

namespace bench::parallel_loops {

inline constexpr std::int64_t sum_n = 100'000'000;
inline constexpr std::int64_t balanced_n = 10'000'000;
inline constexpr std::int64_t balanced_small_n = 100'000;
inline constexpr std::int64_t unbalanced_n = 10'000;
inline constexpr std::int64_t slow_n = 1'000;
inline constexpr std::chrono::microseconds slow_body{10};

// ---- the element work, the same for every competitor ----------------------

// The summed values: i % 8, so partial sums stay exact integers.
inline double sum_value(std::int64_t i) noexcept { return static_cast<double>(i % 8); }

// Made on first use (800 MB), kept for the process's lifetime.
inline const std::vector<double>& sum_data() {
  static const std::vector<double> data = [] {
    std::vector<double> v(static_cast<std::size_t>(sum_n));
    for (std::int64_t i = 0; i < sum_n; ++i) v[static_cast<std::size_t>(i)] = sum_value(i);
    return v;
  }();
  return data;
}

inline std::int64_t sum_expected() noexcept {
  // 0 + 1 + ... + 7 = 28 per full block of 8, then the tail.
  std::int64_t s = (sum_n / 8) * 28;
  for (std::int64_t r = 0; r < sum_n % 8; ++r) s += r;
  return s;
}

// The light body of the balanced loop.
inline void bump(double& x) noexcept { x += 1.0; }

// The unbalanced loop's element: i dependent steps of an LCG.
inline std::uint64_t unbalanced_work(std::int64_t i) noexcept {
  auto x = static_cast<std::uint64_t>(i);
  for (std::int64_t k = 0; k < i; ++k) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}

// An order-independent checksum of the unbalanced loop's outputs.
inline std::uint64_t checksum(const std::vector<std::uint64_t>& out) noexcept {
  std::uint64_t s = 0;
  for (std::size_t i = 0; i < out.size(); ++i) s += out[i] * (2 * i + 1);
  return s;
}

inline std::uint64_t unbalanced_expected() {
  static const std::uint64_t expected = [] {
    std::vector<std::uint64_t> out(static_cast<std::size_t>(unbalanced_n));
    for (std::int64_t i = 0; i < unbalanced_n; ++i)
      out[static_cast<std::size_t>(i)] = unbalanced_work(i);
    return checksum(out);
  }();
  return expected;
}

// The slow loop's element: busy for slow_body, then marks its slot.
inline void slow_element(std::vector<unsigned char>& marks, std::int64_t i) noexcept {
  const auto until = std::chrono::steady_clock::now() + slow_body;
  while (std::chrono::steady_clock::now() < until) {
  }
  marks[static_cast<std::size_t>(i)] = 1;
}

// ---- registration ------------------------------------------------------------
// Each `setup()` prepares one benchmark run (a pool, an arena) and returns
// the callable that runs the loop once.

// run: double(const std::vector<double>&), the sum.
template <class Setup>
void add_sum(std::string_view variant, Setup setup) {
  bench::add("parallel_loops", "sum_1e8", variant,
             [setup](benchmark::State& state) {
               const std::vector<double>& data = sum_data();
               auto run = setup();
               for (auto _ : state) {
                 const double s = run(data);
                 if (!check_equal(state, static_cast<std::int64_t>(s), sum_expected(), "sum")) {
                   break;
                 }
               }
             })
      ->Unit(benchmark::kMillisecond)
      ->MinTime(bench::min_time)
      ->MinWarmUpTime(bench::warm_up)
      ->UseRealTime();
}

// One row of add_balanced(): n elements.
template <class Setup>
void add_balanced_of(std::string_view variant, Setup setup, std::string_view size, std::int64_t n,
                     benchmark::TimeUnit unit) {
  bench::add("parallel_loops", size, variant,
             [setup, n](benchmark::State& state) {
               std::vector<double> x(static_cast<std::size_t>(n), 0.0);
               auto run = setup();
               for (auto _ : state) run(x);
               // Every element was bumped once per iteration.
               const auto rounds = static_cast<double>(state.iterations());
               check_equal(
                   state,
                   std::count_if(x.begin(), x.end(), [rounds](double v) { return v != rounds; }), 0,
                   "elements not bumped once per iteration");
             })
      ->Unit(unit)
      ->MinTime(bench::min_time)
      ->MinWarmUpTime(bench::warm_up)
      ->UseRealTime();
}

// run: void(std::vector<double>&), bump() on every element. Two rows: 10^7
// elements, and 10^5 (an in-cache loop, where the cost of starting and
// ending a call shows).
template <class Setup>
void add_balanced(std::string_view variant, Setup setup) {
  add_balanced_of(variant, setup, "balanced_1e7", balanced_n, benchmark::kMillisecond);
  add_balanced_of(variant, setup, "balanced_1e5", balanced_small_n, benchmark::kMicrosecond);
}

// run: void(std::vector<std::uint64_t>& out), out[i] = unbalanced_work(i).
template <class Setup>
void add_unbalanced(std::string_view variant, Setup setup) {
  bench::add("parallel_loops", "unbalanced_1e4", variant,
             [setup](benchmark::State& state) {
               const std::uint64_t expected = unbalanced_expected();
               std::vector<std::uint64_t> out(static_cast<std::size_t>(unbalanced_n));
               auto run = setup();
               for (auto _ : state) {
                 std::fill(out.begin(), out.end(), 0);
                 run(out);
                 if (!check(state, checksum(out) == expected, "unbalanced loop: wrong outputs")) {
                   break;
                 }
               }
             })
      ->Unit(benchmark::kMillisecond)
      ->MinTime(bench::min_time)
      ->MinWarmUpTime(bench::warm_up)
      ->UseRealTime();
}

// run: void(std::vector<unsigned char>& marks), slow_element() on each.
template <class Setup>
void add_slow(std::string_view variant, Setup setup) {
  bench::add("parallel_loops", "slow_1000", variant,
             [setup](benchmark::State& state) {
               std::vector<unsigned char> marks(static_cast<std::size_t>(slow_n));
               auto run = setup();
               for (auto _ : state) {
                 std::fill(marks.begin(), marks.end(), 0);
                 run(marks);
                 if (!check_equal(state, std::count(marks.begin(), marks.end(), 1), slow_n,
                                  "slow elements run")) {
                   break;
                 }
               }
             })
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(bench::min_time)
      ->MinWarmUpTime(bench::warm_up)
      ->UseRealTime();
}

}  // namespace bench::parallel_loops
