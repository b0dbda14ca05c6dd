// Batches (issue 9, seed 004 Hipe): 1,000,000 empty jobs handed over one by
// one and in batches of 10 and of 1,000, and Hipe's futures example at
// 100,000 futures (submit them, wait for all, get all).
//
// Names: "batches/1000000_by_<k>/<variant>" (real time for all the jobs;
// k = 1 is one by one) and "batches/futures_100000/<variant>" (real time
// for submit + wait all + get all). Every run checks that every job ran, or
// that the results sum to what they should. weft's futures also report the
// counters submit_ns and when_all_ns: per iteration, the mean time spent
// submitting all the jobs, and then in when_all(...).get() and the sum.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/check.hpp"
#include "common/job_counter.hpp"
#include "common/registry.hpp"

namespace bench::batches {

inline constexpr std::int64_t jobs = 1'000'000;
inline constexpr std::int64_t futures = 100'000;

// `setup()` prepares one benchmark run and returns a callable `void(n, k)`
// that runs n jobs calling bench::count_job(), handed over k at a time, and
// waits for them. Registered for each k of `batch_sizes`.
template <class Setup>
void add_jobs(std::string_view variant, std::initializer_list<std::int64_t> batch_sizes,
              Setup setup) {
  for (const std::int64_t k : batch_sizes) {
    bench::add("batches", std::to_string(jobs) + "_by_" + std::to_string(k), variant,
               [setup, k](benchmark::State& state) {
                 auto run = setup();
                 for (auto _ : state) {
                   const job_tally before = job_tally_now();
                   run(jobs, k);
                   const job_tally after = job_tally_now();
                   if (!check_equal(state, static_cast<std::int64_t>(after.total - before.total),
                                    jobs, "jobs that ran")) {
                     break;
                   }
                 }
               })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(bench::min_time)
        ->MinWarmUpTime(bench::warm_up)
        ->UseRealTime();
  }
}

// The value future i holds, and what all of them sum to.
inline std::int64_t future_value(std::int64_t i) noexcept { return i % 1000; }
inline constexpr std::int64_t futures_sum = (futures / 1000) * (999 * 1000 / 2);

// The sum of the results, for the competitors that store them in a vector.
inline std::int64_t sum(const std::vector<std::int64_t>& results) noexcept {
  std::int64_t total = 0;
  for (const std::int64_t v : results) total += v;
  return total;
}

// What a futures run may return instead of the bare sum: the sum, and how
// long its two phases took, submitting all the jobs, then waiting for all
// of them, getting their results and summing them.
struct timed_sum {
  std::int64_t sum;
  std::chrono::nanoseconds submit;
  std::chrono::nanoseconds when_all;
};

// `setup()` returns a callable `std::int64_t(n)` or `timed_sum(n)` that
// makes n jobs, job i returning future_value(i), waits for all and returns
// the sum of all results. With timed_sum, the run also reports the counters
// submit_ns and when_all_ns, the mean of each phase per iteration.
template <class Setup>
void add_futures(std::string_view variant, Setup setup) {
  bench::add("batches", "futures_" + std::to_string(futures), variant,
             [setup](benchmark::State& state) {
               auto run = setup();
               constexpr bool timed = std::is_same_v<decltype(run(futures)), timed_sum>;
               std::chrono::nanoseconds submit{}, when_all{};
               for (auto _ : state) {
                 std::int64_t got = 0;
                 if constexpr (timed) {
                   const timed_sum r = run(futures);
                   submit += r.submit;
                   when_all += r.when_all;
                   got = r.sum;
                 } else {
                   got = run(futures);
                 }
                 if (!check_equal(state, got, futures_sum, "sum of the results")) break;
               }
               if constexpr (timed) {
                 const auto per_iteration = [](std::chrono::nanoseconds total) {
                   return benchmark::Counter(static_cast<double>(total.count()),
                                             benchmark::Counter::kAvgIterations);
                 };
                 state.counters["submit_ns"] = per_iteration(submit);
                 state.counters["when_all_ns"] = per_iteration(when_all);
               }
             })
      ->Unit(benchmark::kMillisecond)
      ->MinTime(bench::min_time)
      ->MinWarmUpTime(bench::warm_up)
      ->UseRealTime();
}

}  // namespace bench::batches
