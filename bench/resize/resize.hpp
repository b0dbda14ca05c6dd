// The cost of resizing a running pool (issue 10), beside the floor of what
// any resize must do: start or stop a thread.
//
//   resize/grow/<variant>     the time from asking for one more worker until
//                             that new worker has run its first job
//   resize/shrink/<variant>   the time from asking an idle worker to go until
//                             its thread has ended (joined)
//
// Each iteration takes 200 samples of each (a grow, then a shrink back);
// counters median_ns and p90_ns. The real time is for the 200 pairs.
//
// weft: pool{threads = bench::workers, max_threads = bench::workers + 1};
// grow is resize(workers + 1) followed by spawn_on(the new index) of a job
// that records when it starts; shrink is resize(workers) with the new worker
// idle. seq, the floor: a std::thread made and run to its first instruction
// (grow), and a std::thread blocked on a condition variable told to end and
// joined (shrink). oneTBB and OpenMP have no call that starts or ends a
// worker thread of a running pool.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <string_view>
#include <vector>

#include "common/check.hpp"
#include "common/measure.hpp"
#include "common/registry.hpp"

namespace bench::resize {

inline constexpr int samples_per_iteration = 200;

using steady = std::chrono::steady_clock;

// `grow()` returns when the new thread's first job (or instruction)
// started; `shrink()` returns once the thread has ended. Both are timed
// from just before the call.
template <class Grow, class Shrink>
void measure(benchmark::State& state, Grow& grow, Shrink& shrink) {
  std::vector<double> grown;
  std::vector<double> shrunk;
  for (auto _ : state) {
    grown.clear();
    shrunk.clear();
    for (int i = 0; i < samples_per_iteration; ++i) {
      const steady::time_point asked = steady::now();
      const steady::time_point started = grow();
      grown.push_back(std::chrono::duration<double, std::nano>(started - asked).count());
      const steady::time_point asked_to_go = steady::now();
      shrink();
      shrunk.push_back(
          std::chrono::duration<double, std::nano>(steady::now() - asked_to_go).count());
    }
    const bool ordered = std::all_of(grown.begin(), grown.end(), [](double s) { return s >= 0; });
    if (!check(state, ordered, "a first job ran before its resize, or not on the new worker"))
      return;
  }
  auto p90 = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() * 9 / 10];
  };
  state.counters["p90_ns"] = p90(grown);
  state.counters["median_ns"] = median(grown);
  state.counters["shrink_median_ns"] = median(shrunk);
}

template <class F>
void add(std::string_view variant, F&& run) {
  bench::add("resize", "grow_and_shrink", variant, std::forward<F>(run))
      ->Unit(benchmark::kMillisecond)
      ->Iterations(1)
      ->UseRealTime();
}

}  // namespace bench::resize
