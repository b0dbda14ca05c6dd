// Linear chain: N tasks, each incrementing one counter after its predecessor
// (Taskflow's benchmarks/linear_chain shape), with N = 1,048,576 and
// 4,194,304. Two workloads:
//   linear_chain/<N>/<variant>      build the graph, then run it once
//   linear_chain_run/<N>/<variant>  run a graph built beforehand (untimed)
// The counter must equal N after every run.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/check.hpp"
#include "common/registry.hpp"

namespace bench::linear_chain {

inline constexpr std::int64_t sizes[] = {1'048'576, 4'194'304};

// `setup(n)` returns a callable `std::int64_t()` that builds and runs a chain
// of n tasks and returns the counter.
template <class Setup>
void add_build_run(std::string_view variant, Setup setup) {
  for (const std::int64_t n : sizes) {
    add("linear_chain", std::to_string(n), variant,
        [setup, n](benchmark::State& state) {
          auto run = setup(n);
          for (auto _ : state) {
            if (!check_equal(state, run(), n, "counter after the chain")) break;
          }
        })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(bench::min_time)
        ->MinWarmUpTime(bench::warm_up)
        ->UseRealTime();
  }
}

// `setup(n, counter)` builds a chain of n tasks incrementing `counter` and
// returns a callable `void()` that runs it once.
template <class Setup>
void add_run(std::string_view variant, Setup setup) {
  for (const std::int64_t n : sizes) {
    add("linear_chain_run", std::to_string(n), variant,
        [setup, n](benchmark::State& state) {
          std::int64_t counter = 0;
          auto run = setup(n, counter);
          for (auto _ : state) {
            counter = 0;
            run();
            if (!check_equal(state, counter, n, "counter after the chain")) break;
          }
        })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(bench::min_time)
        ->MinWarmUpTime(bench::warm_up)
        ->UseRealTime();
  }
}

}  // namespace bench::linear_chain
