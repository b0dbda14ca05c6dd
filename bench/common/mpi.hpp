// MPI for the benchmark executables that run as several processes
// (weft_bench_cholesky_mpi_<competitor>, built with WEFT_BENCH_MPI): the
// start and end of MPI in main(), the harness's own communicator, and what
// each process sends.
//
// Under `mpirun -np R` every rank runs the same benchmarks, the same number
// of times (fixed iterations, see cholesky_mpi/cholesky_mpi.hpp), and only
// rank 0 reports: the other ranks print nothing and write no
// --benchmark_out file.
//
// Sent traffic is counted through MPI's profiling interface: this file
// defines MPI_Send, MPI_Isend and the other point-to-point sends, each of
// which counts the message and its bytes and calls the PMPI_ function that
// does the work. An executable's definition takes precedence over libmpi's
// for every caller in the process (StarPU-MPI's shared library, weft::mpi),
// so every library is counted the same way, whatever it sends and from
// whichever thread. Collectives (barriers, reductions) are not counted;
// neither are one-sided operations nor sends to the process itself.
#pragma once

#include <benchmark/benchmark.h>
#include <mpi.h>

#include <cstdint>

namespace bench::mpi {

// MPI for the life of main(): MPI_Init_thread with MPI_THREAD_MULTIPLE (a
// library's progress thread and the harness call MPI concurrently) and
// MPI_Finalize. Before Google Benchmark sees argv, it removes
// --benchmark_out and --benchmark_out_format on every rank but 0, and it
// ends the process (status 2) on flags that would make the ranks run
// different benchmarks or iterations (random interleaving, warm-up by
// time). With --benchmark_list_tests it starts nothing: listing needs no
// MPI and works without mpirun.
class session {
 public:
  session(int& argc, char**& argv);
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  // The reporter for RunSpecifiedBenchmarks: nullptr (Google Benchmark's
  // console) on rank 0, one that prints nothing on the other ranks.
  benchmark::BenchmarkReporter* display_reporter();

  // Adds "ranks" and "workers_per_rank" to the JSON context; returns
  // ranks x workers_per_rank(), the context's "workers", the threads that
  // run tasks in all, so that the report puts the rows beside single-process
  // runs with as many workers.
  int add_context() const;

 private:
  bool started_ = false;
};

// This process's rank in MPI_COMM_WORLD and their number (0 and 1 when MPI
// was not started).
int rank() noexcept;
int ranks() noexcept;

// A duplicate of MPI_COMM_WORLD for the harness's own barriers, reductions
// and transfers, so that none of them can match a message of the library
// under test, whatever tags it uses on MPI_COMM_WORLD.
MPI_Comm harness() noexcept;

// Threads that run tasks on each rank: WEFT_BENCH_WORKERS (default 2)
// shared out among the ranks, at least 1. With the default and 2 ranks: 1.
int workers_per_rank() noexcept;

// What this process has sent to other processes since it started.
struct traffic {
  std::uint64_t bytes = 0;
  std::uint64_t messages = 0;
};
traffic sent() noexcept;

}  // namespace bench::mpi
