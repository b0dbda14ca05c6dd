// Timers (issue 10): how late a timer's job starts, and what a pending timer
// costs an idle process.
//
//   timers/1ms/<variant>          1,000 timers of 1 ms, one after the other
//                                 on an idle pool: each sample is the time its
//                                 job started minus (the time spawn_after was
//                                 called + 1 ms). Counters median_ns, p99_ns
//                                 (and p90_ns, max_ns, cpu_ms_per_s: the
//                                 process's CPU per second of the run)
//   timers/1h_pending/<variant>   the process's CPU during 1 s of sleep while
//                                 a timer an hour away waits (counter cpu_ms)
//
// weft: spawn_after on a pool of bench::workers workers, after some work, so
// that the workers have run and gone to sleep; the caller (not a worker)
// waits for each job with std::atomic::wait before the next timer, so every
// sample starts from an idle pool (the workers park 100 us after a job).
// seq: the floor, no library: one std::thread sleeping with
// condition_variable::wait_until to the same deadlines and recording when it
// wakes (what any runtime whose timer thread really sleeps pays, before
// handing the job to a worker). Both sleeping threads set their timer slack
// to 1 ns, as weft's timer thread does.
//
// oneTBB and OpenMP have no timers.
#pragma once

#include <benchmark/benchmark.h>
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string_view>
#include <thread>
#include <vector>

#include "common/check.hpp"
#include "common/measure.hpp"
#include "common/registry.hpp"

namespace bench::timers {

using namespace std::chrono_literals;

inline constexpr int samples_per_iteration = 1'000;
inline constexpr auto delay = 1ms;
inline constexpr auto far_away = std::chrono::hours{1};
inline constexpr auto idle_period = 1s;

// The calling thread's timer slack, as weft's timer thread sets its own.
inline void precise_timer_slack() { prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); }

// `sample(due)` arms one timer for `due` (steady_clock::now() + delay, taken
// just before the call), waits until it has run, and returns when it
// started, or a default time point if it ran on the caller's own thread.
template <class Sample>
void lateness(benchmark::State& state, Sample& sample) {
  std::vector<double> samples;
  samples.reserve(samples_per_iteration);
  double cpu_ms_per_s = 0;
  for (auto _ : state) {
    samples.clear();
    const auto cpu_before = process_cpu_time();
    const auto wall_before = std::chrono::steady_clock::now();
    for (int i = 0; i < samples_per_iteration; ++i) {
      const auto due = std::chrono::steady_clock::now() + delay;
      const auto started = sample(due);
      if (!check(state, started != std::chrono::steady_clock::time_point{},
                 "a timer's job ran on the waiting thread")) {
        return;
      }
      samples.push_back(std::chrono::duration<double, std::nano>(started - due).count());
    }
    const auto wall = std::chrono::steady_clock::now() - wall_before;
    cpu_ms_per_s =
        to_ms(process_cpu_time() - cpu_before) / std::chrono::duration<double>(wall).count();
    const bool never_early =
        std::all_of(samples.begin(), samples.end(), [](double s) { return s >= 0; });
    if (!check(state, never_early, "a timer's job started before its deadline")) return;
  }
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  auto at = [&sorted](std::size_t per_mille) {
    return sorted.empty() ? 0
                          : sorted[std::min(sorted.size() - 1, sorted.size() * per_mille / 1000)];
  };
  state.counters["median_ns"] = median(samples);
  state.counters["p90_ns"] = at(900);
  state.counters["p99_ns"] = at(990);
  state.counters["max_ns"] = sorted.empty() ? 0 : sorted.back();
  state.counters["cpu_ms_per_s"] = cpu_ms_per_s;
}

// `arm()` makes a timer `far_away` from now, `disarm()` cancels it and
// returns whether it was still pending (both outside the measured second).
template <class Arm, class Disarm>
void pending_cpu(benchmark::State& state, Arm& arm, Disarm& disarm) {
  for (auto _ : state) {
    arm();
    std::this_thread::sleep_for(100ms);  // let whatever started settle
    const auto start = process_cpu_time();
    std::this_thread::sleep_for(idle_period);
    state.counters["cpu_ms"] = to_ms(process_cpu_time() - start);
    if (!check(state, disarm(), "the timer an hour away had fired")) return;
  }
}

template <class F>
void add_lateness(std::string_view variant, F&& run) {
  bench::add("timers", "1ms", variant, std::forward<F>(run))
      ->Unit(benchmark::kMillisecond)
      ->Iterations(1)
      ->UseRealTime();
}

template <class F>
void add_pending(std::string_view variant, F&& run) {
  bench::add("timers", "1h_pending", variant, std::forward<F>(run))
      ->Unit(benchmark::kMillisecond)
      ->Iterations(1)
      ->UseRealTime();
}

}  // namespace bench::timers
