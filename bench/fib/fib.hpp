// fib(n) with one task per call and no sequential cutoff: the same recursion
// for every competitor, so the time is dominated by creating, scheduling and
// joining some million tiny tasks (fib(30) makes 2.7 million calls, fib(32)
// 7 million).
//
// Names: "fib/<n>/<variant>" (real time), and in the peak-RSS suite
// "fib_peak_rss/<n>/<variant>" (counter peak_rss_mib).
//
// Issue 13's cost of one spawn: weft's join, task_group and spawn_wait_until
// also report the counter ns_per_spawn = (real time per iteration x workers
// - sequential time) / spawns: the CPU time the workers spent beyond the
// plain recursion's, spread over the spawns = 2 x (fib(n + 1) - 1) tasks the
// shape makes (each call with n >= 2 forks both children; there are
// fib(n + 1) - 1 such calls). The sequential time is the fastest of
// sequential_runs runs of sequential_fib, seq.cpp's own recursion, in the
// same process just before the timed loop (also as counter seq_ms).
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/check.hpp"
#include "common/measure.hpp"
#include "common/registry.hpp"

namespace bench::fib {

inline constexpr int sizes[] = {25, 30, 32};
inline constexpr int peak_rss_size = 32;
inline constexpr int sequential_runs = 5;

// The sequential baseline (seq.cpp's "recursion"): plain recursion, which
// GCC partly unrolls into loops.
inline int fib_recursion(int n) {
  if (n < 2) return n;
  return fib_recursion(n - 1) + fib_recursion(n - 2);
}

// fib(n) by plain recursion, n hidden from the optimiser so that it cannot
// fold the recursion.
inline int sequential_fib(int n) {
  benchmark::DoNotOptimize(n);
  return fib_recursion(n);
}

// The tasks a fib(n) spawns when every call with n >= 2 forks both children.
inline constexpr std::int64_t spawns(int n) {
  return 2 * (fib_table[static_cast<std::size_t>(n) + 1] - 1);
}
static_assert(spawns(30) == 2'692'536);

// The fastest of sequential_runs sequential_fib(n), in nanoseconds.
inline double fastest_sequential_ns(int n) {
  using clock = std::chrono::steady_clock;
  auto fastest = clock::duration::max();
  for (int run = 0; run < sequential_runs; ++run) {
    const auto start = clock::now();
    int result = sequential_fib(n);
    benchmark::DoNotOptimize(result);
    fastest = std::min(fastest, clock::now() - start);
  }
  return std::chrono::duration<double, std::nano>(fastest).count();
}

// What add_timing reports besides the real time.
enum class counters { time, ns_per_spawn };

// Runs fib(n) once per iteration and checks every result.
template <class Fib>
void measure(benchmark::State& state, Fib& fib, int n) {
  const std::string what = "fib(" + std::to_string(n) + ")";
  for (auto _ : state) {
    const int result = fib(n);
    if (!check_equal(state, result, fib_table[static_cast<std::size_t>(n)], what)) break;
  }
}

// Runs measure() and sets the counters ns_per_spawn and seq_ms (see the top
// of this file).
template <class Fib>
void measure_spawns(benchmark::State& state, Fib& fib, int n, double sequential_ns) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  measure(state, fib, n);
  const double elapsed = std::chrono::duration<double, std::nano>(clock::now() - start).count();
  if (state.error_occurred() || state.iterations() == 0) return;
  const double per_iteration = elapsed / static_cast<double>(state.iterations());
  state.counters["ns_per_spawn"] =
      (per_iteration * workers - sequential_ns) / static_cast<double>(spawns(n));
  state.counters["seq_ms"] = sequential_ns / 1e6;
}

// `setup()` prepares one benchmark run (starts a pool, an arena) and returns
// a callable `int(int n)` that computes fib(n) with it; the setup is not
// timed. Registers fib/<n>/<variant> for every size.
template <class Setup>
void add_timing(std::string_view variant, Setup setup, counters reported = counters::time) {
  for (const int n : sizes) {
    add("fib", std::to_string(n), variant,
        [setup, n, reported](benchmark::State& state) {
          if (reported == counters::time) {
            auto fib = setup();
            measure(state, fib, n);
            return;
          }
          // Before the setup, so that no thread of the pool is awake yet to
          // compete for the cores; the timed loop follows at once.
          const double sequential_ns = fastest_sequential_ns(n);
          auto fib = setup();
          measure_spawns(state, fib, n, sequential_ns);
        })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(bench::min_time)
        ->MinWarmUpTime(bench::warm_up)
        ->UseRealTime();
  }
}

// Registers fib_peak_rss/<peak_rss_size>/<variant>: one fib(32) in a fresh
// process, then the process's peak RSS (which includes the pool and the
// libraries). start_rss_mib is the peak before the setup, for reference.
template <class Setup>
void add_peak_rss(std::string_view variant, Setup setup) {
  const std::string name = benchmark_name("fib_peak_rss", std::to_string(peak_rss_size), variant);
  add("fib_peak_rss", std::to_string(peak_rss_size), variant,
      [setup, name](benchmark::State& state) {
        const double start = peak_rss_mib();
        if (!check(state, claim_process_for_peak_rss(name),
                   "peak RSS needs a process of its own: run one fib_peak_rss benchmark per "
                   "process (--benchmark_filter)")) {
          return;
        }
        auto fib = setup();
        measure(state, fib, peak_rss_size);
        state.counters["peak_rss_mib"] = peak_rss_mib();
        state.counters["start_rss_mib"] = start;
      })
      ->Unit(benchmark::kMillisecond)
      ->Iterations(1)
      ->UseRealTime();
}

}  // namespace bench::fib
