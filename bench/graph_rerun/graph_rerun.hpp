// Rerunning a small graph (issue 8, Taskflow's run_n): a graph of 100 tasks
// in 10 layers of 10, task (l, i) after (l - 1, i) and (l - 1, (i + 1) % 10),
// built once (untimed) and run 1,000 times one after another. Each task adds
// one to its own counter.
//
//   graph_rerun/100x1000/<variant>
//
// weft: pool.run_n(g, 1000).get(); oneTBB: flow::graph of continue_nodes
// with a broadcast_node in front, try_put + wait_for_all 1,000 times inside
// a task_arena; seq: the tasks called in layer order 1,000 times. Checked:
// every counter is 1,000 after each iteration.
#pragma once

#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <string_view>

#include "common/check.hpp"
#include "common/registry.hpp"

namespace bench::graph_rerun {

inline constexpr int layers = 10;
inline constexpr int width = 10;
inline constexpr int tasks = layers * width;
inline constexpr int runs = 1'000;

// One counter per task, each on its own cache line (the tasks of a layer run
// on different workers).
struct counters {
  struct alignas(64) slot {
    std::int64_t n = 0;
  };
  std::array<slot, tasks> at{};
  void clear() {
    for (slot& s : at) s.n = 0;
  }
  [[nodiscard]] bool all(std::int64_t want) const {
    for (const slot& s : at) {
      if (s.n != want) return false;
    }
    return true;
  }
};

// The predecessors of task (l, i), l >= 1: (l - 1, i) and (l - 1, (i + 1) % width).
constexpr int index(int layer, int i) { return layer * width + i; }

// `setup(c)` builds the graph over `c` and returns a callable `void()` that
// runs it `runs` times.
template <class Setup>
void add(std::string_view variant, Setup setup) {
  bench::add("graph_rerun", "100x1000", variant,
             [setup](benchmark::State& state) {
               counters c;
               auto run = setup(c);
               for (auto _ : state) {
                 c.clear();
                 run();
                 if (!check(state, c.all(runs), "a task ran other than 1,000 times")) break;
               }
             })
      ->Unit(benchmark::kMillisecond)
      ->MinTime(bench::min_time)
      ->MinWarmUpTime(bench::warm_up)
      ->UseRealTime();
}

}  // namespace bench::graph_rerun
