// What an idle pool costs, as CPU time of the whole process (every live
// thread's CPU clock, user + system, read up to date) while nothing useful
// runs:
//   idle/1s/<variant>         right after a batch of real work, the CPU
//                             burned during the following 1 s of sleep
//                             (workers spinning down, then parked)
//   idle/200ms_job/<variant>  with the pool settled, the CPU burned while a
//                             worker runs one job that sleeps 200 ms and the
//                             main thread waits for it
// Counter cpu_ms; one iteration per repetition (the real time is dominated
// by the sleeps and means nothing).
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <string_view>
#include <thread>

#include "common/check.hpp"
#include "common/job_counter.hpp"
#include "common/measure.hpp"
#include "common/registry.hpp"

namespace bench::idle {

using namespace std::chrono_literals;

// The real work before measuring: this many empty jobs, spawned and waited
// for, enough to get every worker running and stealing.
inline constexpr std::int64_t work_jobs = 100'000;
inline constexpr auto idle_period = 1s;
inline constexpr auto job_sleep = 200ms;
// Quiet time between the work and the 200 ms job, so that job measures a
// pool that has gone idle rather than one still spinning down.
inline constexpr auto settle = 100ms;

// A competitor provides a default-constructible `Library` (its constructor
// starts the pool) with
//   void work(std::int64_t n);              n bench::count_job() jobs + wait
//   bool sleeping_job(duration d);          one job sleeping d on a worker,
//                                           awaited by the caller; returns
//                                           whether it ran on another thread
//   static constexpr bool has_workers;      false for the sequential baseline
template <class Library>
bool do_work(benchmark::State& state, Library& lib) {
  const job_tally before = job_tally_now();
  lib.work(work_jobs);
  const job_tally after = job_tally_now();
  return check_equal(state, static_cast<std::int64_t>(after.total - before.total), work_jobs,
                     "jobs that ran before the idle period");
}

template <class Library>
void after_work(benchmark::State& state) {
  Library lib;
  for (auto _ : state) {
    if (!do_work(state, lib)) return;
    const auto start = process_cpu_time();
    std::this_thread::sleep_for(idle_period);
    state.counters["cpu_ms"] = to_ms(process_cpu_time() - start);
  }
}

template <class Library>
void during_sleeping_job(benchmark::State& state) {
  Library lib;
  if (!do_work(state, lib)) return;
  std::this_thread::sleep_for(settle);
  for (auto _ : state) {
    const auto start = process_cpu_time();
    const bool on_other_thread = lib.sleeping_job(job_sleep);
    state.counters["cpu_ms"] = to_ms(process_cpu_time() - start);
    if (Library::has_workers &&
        !check(state, on_other_thread, "the sleeping job ran on the waiting thread")) {
      return;
    }
  }
}

template <class Library>
void add(std::string_view variant) {
  bench::add("idle", "1s", variant, after_work<Library>)
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  bench::add("idle", "200ms_job", variant, during_sleeping_job<Library>)
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

}  // namespace bench::idle
