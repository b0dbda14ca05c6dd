// Binary tree: a graph of depth 20 (2^20 - 1 tasks) where every task
// precedes its two children (Taskflow's benchmarks/binary_tree shape); each
// task marks its own slot and the marks must add up to the task count.
// Built and run once per iteration.
//
// Name: "binary_tree/20/<variant>" (real time per build + run).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "common/check.hpp"
#include "common/registry.hpp"

namespace bench::binary_tree {

inline constexpr int depth = 20;
inline constexpr std::size_t tasks = (std::size_t{1} << depth) - 1;

// Task i's children are 2i + 1 and 2i + 2.
struct marks {
  std::vector<unsigned char> slot = std::vector<unsigned char>(tasks, 0);
  void mark(std::size_t i) noexcept { slot[i] = 1; }
  std::int64_t take() noexcept {
    std::int64_t sum = 0;
    for (unsigned char& s : slot) {
      sum += s;
      s = 0;
    }
    return sum;
  }
};

// `setup()` returns a callable `void(marks&)` that builds the tree and runs it.
template <class Setup>
void add(std::string_view variant, Setup setup) {
  bench::add("binary_tree", std::to_string(depth), variant,
             [setup](benchmark::State& state) {
               auto run = setup();
               marks m;
               for (auto _ : state) {
                 run(m);
                 if (!check_equal(state, m.take(), static_cast<std::int64_t>(tasks),
                                  "tree tasks that ran")) {
                   break;
                 }
               }
             })
      ->Unit(benchmark::kMillisecond)
      ->MinTime(bench::min_time)
      ->MinWarmUpTime(bench::warm_up)
      ->UseRealTime();
}

}  // namespace bench::binary_tree
