// Submit-and-wait round trips: the calling thread (not a worker) hands one
// tiny job to the library, a worker runs it, and the caller wakes up with
// its result. Each of the 2,048 round trips of an iteration is timed on its
// own with steady_clock; the counter median_ns is the median over all round
// trips of all iterations. Every job reports whether it ran on a thread
// other than the caller, and a round trip that the caller ran itself fails
// the check (the target is a worker's latency, not an inline call's).
//
// There is no sequential baseline: without a second thread there is no
// worker to hand the job to.
//
// Name: "round_trip/2048/<variant>" (counter median_ns; the real time is
// for a batch of 2,048).
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "common/check.hpp"
#include "common/measure.hpp"
#include "common/registry.hpp"

namespace bench::round_trip {

inline constexpr int rounds = 2'048;
// Round trips run before timing starts, so that the first timed ones do not
// pay for starting threads or first-touch allocations.
inline constexpr int warm_up_rounds = 256;

// `trip()` performs one round trip and returns true if the job ran on a
// thread other than the caller.
template <class Trip>
void measure(benchmark::State& state, Trip& trip) {
  for (int i = 0; i < warm_up_rounds; ++i) trip();
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(rounds) * 64);
  for (auto _ : state) {
    int ran_by_caller = 0;
    for (int i = 0; i < rounds; ++i) {
      const auto start = std::chrono::steady_clock::now();
      const bool on_worker = trip();
      const auto stop = std::chrono::steady_clock::now();
      samples.push_back(std::chrono::duration<double, std::nano>(stop - start).count());
      ran_by_caller += on_worker ? 0 : 1;
    }
    if (!check_equal(state, ran_by_caller, 0, "round trips whose job the caller ran itself")) {
      return;
    }
  }
  state.counters["median_ns"] = median(samples);
}

inline benchmark::internal::Benchmark* add(std::string_view variant,
                                           void (*run)(benchmark::State&)) {
  return bench::add("round_trip", std::to_string(rounds), variant, run)
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(bench::min_time)
      ->MinWarmUpTime(bench::warm_up)
      ->UseRealTime();
}

}  // namespace bench::round_trip
