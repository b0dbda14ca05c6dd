// How benchmarks are named and registered.
//
// Every benchmark is called "<workload>/<size>/<variant>", for example
// "fib/30/join" (weft), "fib/30/task_group" (oneTBB), "fib/30/task"
// (OpenMP). Which library ran it is not part of the name: each competitor
// is its own executable and writes "competitor" into the JSON context.
// bench/report/report.py pairs rows by "<workload>/<size>" and ignores
// whatever Google Benchmark appends after the variant ("/iterations:1",
// "/real_time").
//
// Registration is deferred to main() because one executable holds two
// suites: the timing suite (the default) and the peak-RSS suite
// (--peak_rss), whose benchmarks must each run alone in a fresh process.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace bench {

// Reads the environment variable `name`: a whole number from 1 to
// `largest`, `fallback` when unset or empty. Any other value ends the
// process with status 2 and a message.
long whole_number_from_environment(const char* name, long fallback, long largest);

// Reads WEFT_BENCH_WORKERS: a whole number from 1 to max_workers, 2 when
// unset or empty (whole_number_from_environment).
inline constexpr int max_workers = 1024;
std::uint16_t workers_from_environment();

// Every competitor runs with this many worker threads, WEFT_BENCH_WORKERS
// (default 2), and writes it into its JSON context as "workers", so that the
// report can tell the runs of a scaling series apart. oneTBB and OpenMP
// count the thread that enters the arena or the parallel region among them;
// weft's workers are separate from the caller, which blocks meanwhile.
// scripts/bench.sh varies it only for the scaling workloads: with 1, the
// round trips of oneTBB and OpenMP have no thread but the waiting caller.
//
// A std::uint16_t and not an int because a braced initialiser converts it
// without narrowing to both int (oneTBB's task_arena{n}) and std::size_t
// (weft::pool_options{.threads = n}), which no int known only at run time
// does; and OpenMP's num_threads() takes an integer, not a class.
inline const std::uint16_t workers = workers_from_environment();

// How long a timed benchmark runs at least, and how long it runs first
// without being measured (Benchmark::MinTime / MinWarmUpTime). Without the
// warm-up, Google Benchmark accepted a single cold first iteration whenever
// that one alone outlasted min_time: a new pool's first run, with its
// memory not yet touched, took 245 ms where the next took 24 (a 1,048,576
// task linear chain), so rows came out 24 or 245 ms from run to run, and
// 1,000,000 jobs spawned one by one 28 or 269 ms. With 0.1 s of warm-up,
// 8 runs of each gave 23.4-25.5 ms and 30.4-35.3 ms. Every competitor's
// row gets the same.
inline constexpr double min_time = 0.2;
inline constexpr double warm_up = 0.1;

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
