// fib(n) with one task per call and no sequential cutoff: the same recursion
// for every competitor, so the time is dominated by creating, scheduling and
// joining some million tiny tasks (fib(30) makes 2.7 million calls, fib(32)
// 7 million).
//
// Names: "fib/<n>/<variant>" (real time), and in the peak-RSS suite
// "fib_peak_rss/<n>/<variant>" (counter peak_rss_mib).
#pragma once

#include <benchmark/benchmark.h>

#include <string>
#include <string_view>

#include "common/check.hpp"
#include "common/measure.hpp"
#include "common/registry.hpp"

namespace bench::fib {

inline constexpr int sizes[] = {25, 30, 32};
inline constexpr int peak_rss_size = 32;

// Runs fib(n) once per iteration and checks every result.
template <class Fib>
void measure(benchmark::State& state, Fib& fib, int n) {
  const std::string what = "fib(" + std::to_string(n) + ")";
  for (auto _ : state) {
    const int result = fib(n);
    if (!check_equal(state, result, fib_table[static_cast<std::size_t>(n)], what)) break;
  }
}

// `setup()` prepares one benchmark run (starts a pool, an arena) and returns
// a callable `int(int n)` that computes fib(n) with it; the setup is not
// timed. Registers fib/<n>/<variant> for every size.
template <class Setup>
void add_timing(std::string_view variant, Setup setup) {
  for (const int n : sizes) {
    add("fib", std::to_string(n), variant,
        [setup, n](benchmark::State& state) {
          auto fib = setup();
          measure(state, fib, n);
        })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(0.2)
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
