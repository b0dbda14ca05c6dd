// Hipe's own benchmarks (seed 004, Hipe's "Performance-Benchmark"): its
// computation-intensive and memory-intensive tasks. Its empty-job and
// batch-submission tests are the batches workload.
//
//   hipe/compute_<K>_jobs  results[i][j] = log(sqrt(exp(sin(i) + cos(j)))) over
//                          a 2,048 x 4,096 matrix of double, split into K jobs
//                          of consecutive rows, K in {4, 8, 16, 32, 64}. seq
//                          computes the whole matrix in one go, the same run
//                          in every K's row, so that each row has its
//                          weft/seq (the inverse of the speed-up).
//   hipe/memory_1000000    1,000,000 jobs submitted from the calling thread,
//                          each allocating a std::vector<int> of 100 (the size
//                          in Hipe's memory-intensive test), filling and
//                          summing it so that the allocation stays.
//
// Name: "hipe/<size>/<variant>", manual time: the run alone, without
// resetting the output before it or checking it after it (a 64 MiB matrix,
// 1,000,000 sums). Every run is checked: each element against the sequential
// reference, or the total of the sums against its closed form.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "common/check.hpp"
#include "common/registry.hpp"

namespace bench::hipe {

// ---- computation-intensive ---------------------------------------------------

inline constexpr std::size_t rows = 2048;
inline constexpr std::size_t columns = 4096;
inline constexpr std::size_t job_counts[] = {4, 8, 16, 32, 64};

// Rows k * rows / jobs up to (k + 1) * rows / jobs, element (i, j) at
// m[i * columns + j]. Every competitor and the reference run this same
// code, so their results must be equal bit for bit.
inline void compute_share(double* m, std::size_t k, std::size_t jobs) noexcept {
  const std::size_t last = (k + 1) * rows / jobs;
  for (std::size_t i = k * rows / jobs; i < last; ++i) {
    for (std::size_t j = 0; j < columns; ++j) {
      m[i * columns + j] = std::log(
          std::sqrt(std::exp(std::sin(static_cast<double>(i)) + std::cos(static_cast<double>(j)))));
    }
  }
}

// Computed once per process: the sequential run every result must equal.
inline const std::vector<double>& reference() {
  static const std::vector<double> m = [] {
    std::vector<double> r(rows * columns);
    compute_share(r.data(), 0, 1);
    return r;
  }();
  return m;
}

// ---- memory-intensive --------------------------------------------------------

inline constexpr std::int64_t memory_jobs = 1'000'000;
inline constexpr std::int64_t vector_ints = 100;

// Job i stores its sum in sums[i] rather than adding it to one shared
// total, which every job would contend for. Filled with i % 1000,
// i % 1000 + 1, ...; the escaping pointer keeps the compiler from eliding
// the allocation or summing in closed form.
inline void memory_job(std::int64_t* sums, std::int64_t i) {
  std::vector<int> v(static_cast<std::size_t>(vector_ints));
  std::iota(v.begin(), v.end(), static_cast<int>(i % 1000));
  benchmark::DoNotOptimize(v.data());
  sums[i] = std::accumulate(v.begin(), v.end(), std::int64_t{0});
}

// Each i % 1000 occurs memory_jobs / 1000 times.
static_assert(memory_jobs % 1000 == 0);
inline constexpr std::int64_t memory_total = memory_jobs * (vector_ints * (vector_ints - 1) / 2) +
                                             vector_ints * (memory_jobs / 1000) * (999 * 1000 / 2);

// ---- registration ------------------------------------------------------------

// The benchmark loop of every row: `reset()` and `verify()` (false stops the
// run) around each timed `run()`.
template <class Reset, class Run, class Verify>
void timed_runs(benchmark::State& state, Reset reset, Run run, Verify verify) {
  for (auto _ : state) {
    reset();
    const auto start = std::chrono::steady_clock::now();
    run();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    state.SetIterationTime(took.count());
    if (!verify()) break;
  }
}

// `setup()` prepares one benchmark run (a pool, an arena) and returns a
// callable `void(double* m, std::size_t jobs)` that fills the whole matrix m
// with `jobs` jobs of compute_share.
template <class Setup>
void add_compute(std::string_view variant, Setup setup) {
  for (const std::size_t k : job_counts) {
    bench::add("hipe", "compute_" + std::to_string(k) + "_jobs", variant,
               [setup, k](benchmark::State& state) {
                 const std::vector<double>& want = reference();
                 std::vector<double> got(want.size());
                 auto run = setup();
                 timed_runs(
                     state,
                     // NaN equals nothing: an element that no job wrote fails.
                     [&got] { std::fill(got.begin(), got.end(), std::nan("")); },
                     [&] { run(got.data(), k); },
                     [&] {
                       return check_equal(
                           state,
                           std::inner_product(got.begin(), got.end(), want.begin(), std::int64_t{0},
                                              std::plus<>{}, std::not_equal_to<>{}),
                           0, "elements unlike the sequential formula");
                     });
               })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(bench::min_time)
        ->MinWarmUpTime(bench::warm_up)
        ->UseManualTime();
  }
}

// `setup()` prepares one benchmark run and returns a callable
// `void(std::int64_t* sums)` that runs memory_job(sums, i) for every i below
// memory_jobs and waits for all of them.
template <class Setup>
void add_memory(std::string_view variant, Setup setup) {
  bench::add(
      "hipe", "memory_" + std::to_string(memory_jobs), variant,
      [setup](benchmark::State& state) {
        std::vector<std::int64_t> sums(static_cast<std::size_t>(memory_jobs));
        auto run = setup();
        timed_runs(
            state, [&sums] { std::fill(sums.begin(), sums.end(), 0); }, [&] { run(sums.data()); },
            [&] {
              return check_equal(state, std::accumulate(sums.begin(), sums.end(), std::int64_t{0}),
                                 memory_total, "total of the jobs' sums");
            });
      })
      ->Unit(benchmark::kMillisecond)
      ->MinTime(bench::min_time)
      ->MinWarmUpTime(bench::warm_up)
      ->UseManualTime();
}

}  // namespace bench::hipe
