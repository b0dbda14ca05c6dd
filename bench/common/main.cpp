// The main() of every competitor's executable (weft_bench_<competitor>).
// WEFT_BENCH_COMPETITOR names the competitor; bench/CMakeLists.txt defines it.
//
// Besides Google Benchmark's own flags it accepts --peak_rss, which selects
// the peak-RSS suite instead of the timing suite. The environment variable
// WEFT_BENCH_WORKERS sets the number of workers (common/registry.hpp). The exit status is non-zero
// if any result failed verification.
//
// Built with WEFT_BENCH_MPI (the weft_bench_cholesky_mpi_<competitor>
// executables, run under mpirun), it starts and ends MPI around everything
// else and lets only rank 0 report (common/mpi.hpp).
#include <benchmark/benchmark.h>

#include <iostream>
#include <string>
#include <string_view>

#include "common/check.hpp"
#include "common/registry.hpp"

#ifdef WEFT_BENCH_MPI
#include "common/mpi.hpp"
#endif

#ifndef WEFT_BENCH_COMPETITOR
#error "WEFT_BENCH_COMPETITOR must name the competitor this executable measures"
#endif

int main(int argc, char** argv) {
#ifdef WEFT_BENCH_MPI
  bench::mpi::session mpi(argc, argv);
#endif
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
#ifdef WEFT_BENCH_MPI
  const int workers = mpi.add_context();
  benchmark::BenchmarkReporter* const display = mpi.display_reporter();
#else
  const int workers = bench::workers;
  benchmark::BenchmarkReporter* const display = nullptr;  // Google Benchmark's console
#endif
  benchmark::AddCustomContext("workers", std::to_string(workers));
  benchmark::AddCustomContext("suite", selected == bench::suite::timing ? "timing" : "peak_rss");
  bench::register_suite(selected);
  benchmark::RunSpecifiedBenchmarks(display);
  benchmark::Shutdown();
  if (bench::any_check_failed()) {
    std::cerr << argv[0] << ": some results failed verification (see the errors above)\n";
    return 1;
  }
  return 0;
}
