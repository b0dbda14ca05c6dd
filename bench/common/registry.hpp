// How benchmarks are named and registered.
//
// Every benchmark is called "<workload>/<size>/<variant>", for example
// "fib/30/join" (weft), "fib/30/task_group" (oneTBB), "fib/30/task"
// (OpenMP). Which library ran it is not part of the name: each competitor
// is its own executable and writes "competitor" into the JSON context.
// weft_bench_report pairs rows by "<workload>/<size>" and ignores whatever
// Google Benchmark appends after the variant ("/iterations:1",
// "/real_time").
//
// Registration is deferred to main() because one executable holds two
// suites: the timing suite (the default) and the peak-RSS suite
// (--peak_rss), whose benchmarks must each run alone in a fresh process.
#pragma once

#include <benchmark/benchmark.h>

#include <string>
#include <string_view>
#include <utility>

namespace bench {

// Every competitor runs with this many worker threads. oneTBB and OpenMP
// count the thread that enters the arena or the parallel region among them;
// weft's workers are separate from the caller, which blocks meanwhile.
inline constexpr int workers = 2;

enum class suite { timing, peak_rss };

// Queues `add` to run in main() if `which` is the selected suite. Returns a
// dummy value so that a file can call it from a namespace-scope initializer:
//   const int registered = bench::on_startup(bench::suite::timing, [] { ... });
int on_startup(suite which, void (*add)());

// Runs the queued registrations of `which`; called once, by main().
void register_suite(suite which);

inline std::string benchmark_name(std::string_view workload, std::string_view size,
                                  std::string_view variant) {
  std::string name(workload);
  name += '/';
  name += size;
  name += '/';
  name += variant;
  return name;
}

// Registers `fn` (callable with benchmark::State&) as
// "<workload>/<size>/<variant>".
template <class F>
benchmark::internal::Benchmark* add(std::string_view workload, std::string_view size,
                                    std::string_view variant, F&& fn) {
  return benchmark::RegisterBenchmark(benchmark_name(workload, size, variant).c_str(),
                                      std::forward<F>(fn));
}

}  // namespace bench
