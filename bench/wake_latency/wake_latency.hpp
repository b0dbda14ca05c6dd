// Wake-up latency: the calling thread (not a worker) sleeps for 1 ms, long
// enough for the library's idle workers to stop spinning and sleep, then
// hands over one job that records when it starts. The latency is the start
// time minus the hand-over time; each iteration takes 1,000 samples and the
// counters are their median (median_ns) and 90th percentile (p90_ns).
// cpu_ms_per_s is the CPU time the whole process used per second of the
// iteration: what the sleeping (or spinning) workers cost while the caller
// slept, plus 1,000 tiny jobs.
//
// The caller then waits for the job in the library's own way before the
// next sample, so every sample starts from an idle pool.
//
// Name: "wake_latency/1ms_idle/<variant>" (counters median_ns, p90_ns,
// cpu_ms_per_s; the real time is for 1,000 samples, mostly sleeping).
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "common/check.hpp"
#include "common/measure.hpp"
#include "common/registry.hpp"

namespace bench::wake_latency {

inline constexpr int samples_per_iteration = 1'000;
inline constexpr std::chrono::milliseconds idle_time{1};

// `hand_over(started)` gives the library one job that stores
// steady_clock::now() into *started when it starts, waits until the job has
// finished, and returns true if the job ran on a thread other than the
// caller.
template <class HandOver>
void measure(benchmark::State& state, HandOver& hand_over) {
  std::vector<double> samples;
  samples.reserve(samples_per_iteration);
  double cpu_ms_per_s = 0;
  for (auto _ : state) {
    samples.clear();
    int ran_by_caller = 0;
    const auto cpu_before = process_cpu_time();
    const auto wall_before = std::chrono::steady_clock::now();
    for (int i = 0; i < samples_per_iteration; ++i) {
      std::this_thread::sleep_for(idle_time);
      std::chrono::steady_clock::time_point started{};
      const auto handed = std::chrono::steady_clock::now();
      ran_by_caller += hand_over(&started) ? 0 : 1;
      samples.push_back(std::chrono::duration<double, std::nano>(started - handed).count());
    }
    const auto wall = std::chrono::steady_clock::now() - wall_before;
    const auto cpu = process_cpu_time() - cpu_before;
    cpu_ms_per_s = to_ms(cpu) / std::chrono::duration<double>(wall).count();
    if (!check_equal(state, ran_by_caller, 0, "jobs the caller ran itself")) return;
    const bool ordered =
        std::all_of(samples.begin(), samples.end(), [](double s) { return s >= 0; });
    if (!check(state, ordered, "a job started before it was handed over")) return;
  }
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  state.counters["p90_ns"] = sorted.empty() ? 0 : sorted[sorted.size() * 9 / 10];
  state.counters["median_ns"] = median(samples);
  state.counters["cpu_ms_per_s"] = cpu_ms_per_s;
}

template <class F>
benchmark::internal::Benchmark* add(std::string_view variant, F&& run) {
  return bench::add("wake_latency", "1ms_idle", variant, std::forward<F>(run))
      ->Unit(benchmark::kMillisecond)
      ->Iterations(1)
      ->UseRealTime();
}

}  // namespace bench::wake_latency
