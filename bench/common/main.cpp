// The main() of every competitor's executable (weft_bench_<competitor>).
// WEFT_BENCH_COMPETITOR names the competitor; bench/CMakeLists.txt defines it.
//
// Besides Google Benchmark's own flags it accepts --peak_rss, which selects
// the peak-RSS suite instead of the timing suite. The environment variable
// WEFT_BENCH_WORKERS sets the number of workers (common/registry.hpp). The exit status is non-zero
// if any result failed verification.
#include <benchmark/benchmark.h>

#include <iostream>
#include <string>
#include <string_view>

#include "common/check.hpp"
#include "common/registry.hpp"

#ifndef WEFT_BENCH_COMPETITOR
#error "WEFT_BENCH_COMPETITOR must name the competitor this executable measures"
#endif

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  bench::suite selected = bench::suite::timing;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--peak_rss") {
      selected = bench::suite::peak_rss;
    } else {
      std::cerr << argv[0] << ": unknown argument '" << arg << "'\n"
                << "Google Benchmark's flags (--benchmark_*) are accepted, and --peak_rss\n"
                << "selects the peak-memory benchmarks (run one per process).\n";
      return 2;
    }
  }
  benchmark::AddCustomContext("competitor", WEFT_BENCH_COMPETITOR);
  benchmark::AddCustomContext("workers", std::to_string(bench::workers));
  benchmark::AddCustomContext("suite", selected == bench::suite::timing ? "timing" : "peak_rss");
  bench::register_suite(selected);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (bench::any_check_failed()) {
    std::cerr << argv[0] << ": some results failed verification (see the errors above)\n";
    return 1;
  }
  return 0;
}
