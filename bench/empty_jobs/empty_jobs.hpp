// Empty jobs: spawn N jobs that do nothing but bench::count_job() from the
// calling thread, then wait for all of them. Measures the per-job cost of
// spawning, distributing and running, with N = 1,000,000 (throughput) and
// N = 2,048 (a short burst, where waking workers matters).
//
// Name: "empty_jobs/<N>/<variant>" (real time per batch of N).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/check.hpp"
#include "common/job_counter.hpp"
#include "common/registry.hpp"

namespace bench::empty_jobs {

inline constexpr std::int64_t sizes[] = {1'000'000, 2'048};

// Who may run the jobs: anyone (oneTBB and OpenMP put the caller to work
// while it waits), or only workers (weft: the caller spawns and waits).
enum class run_by { any_thread, workers_only };

// `setup()` prepares one benchmark run and returns a callable `void(n)` that
// spawns n jobs calling bench::count_job() and waits for them.
template <class Setup>
void add(std::string_view variant, run_by who, Setup setup) {
  for (const std::int64_t n : sizes) {
    bench::add(
        "empty_jobs", std::to_string(n), variant,
        [setup, n, who](benchmark::State& state) {
          auto run = setup();
          for (auto _ : state) {
            const job_tally before = job_tally_now();
            run(n);
            const job_tally after = job_tally_now();
            if (!check_equal(state, static_cast<std::int64_t>(after.total - before.total), n,
                             "jobs that ran")) {
              break;
            }
            if (who == run_by::workers_only &&
                !check_equal(
                    state, static_cast<std::int64_t>(after.on_this_thread - before.on_this_thread),
                    0, "jobs the spawning thread ran instead of a worker")) {
              break;
            }
          }
        })
        ->Unit(n >= 100'000 ? benchmark::kMillisecond : benchmark::kMicrosecond)
        ->MinTime(bench::min_time)
        ->MinWarmUpTime(bench::warm_up)
        ->UseRealTime();
  }
}

}  // namespace bench::empty_jobs
