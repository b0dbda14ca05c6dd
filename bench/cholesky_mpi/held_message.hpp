// What waiting for a message costs (issue 14: "the pool's idle CPU may rise
// only by the polling you document (measure it)"). Rank 1 owns an object
// and writes it in a task that sleeps `hold` first; rank 0 runs a task that
// reads it, so rank 0 has a receive pending for the whole hold while none
// of its threads has anything to do. Counters, per run: cpu_ms, the CPU
// time (user + system, every live thread of the process) rank 0 burned from
// the barrier before the program to the end of the library's wait (the
// report's metric for the row), cpu_ms_rank<r> the same for each rank, and
// cpu_pct_rank0, rank 0's as a percentage of one core over the wall time.
// A library whose progress engine spins shows here; one that sleeps while
// nothing completes does not.
//
// Name: "mpi_idle/held_<ms>ms/<variant>"; fixed iterations (every rank runs
// the same number), manual time = the wall time of the slowest rank.
#pragma once

#include <benchmark/benchmark.h>
#include <mpi.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/measure.hpp"
#include "common/mpi.hpp"
#include "common/registry.hpp"

namespace bench::held_message {

inline constexpr std::chrono::milliseconds hold{200};

// `setup()` runs on every rank at the start of a benchmark run and returns
// a callable run(hold) that runs the two-task program above and returns
// once it is over on this rank.
template <class Setup>
void add(std::string_view variant, Setup setup) {
  bench::add("mpi_idle", "held_" + std::to_string(hold.count()) + "ms", variant,
             [setup](benchmark::State& state) {
               auto run = setup();
               const int ranks = bench::mpi::ranks();
               std::vector<double> cpu(static_cast<std::size_t>(ranks), 0.0);
               double pct = 0.0;
               for (auto _ : state) {
                 MPI_Barrier(bench::mpi::harness());
                 const auto c0 = bench::process_cpu_time();
                 const auto t0 = std::chrono::steady_clock::now();
                 run(hold);
                 const double wall =
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                 const double mine = bench::to_ms(bench::process_cpu_time() - c0);
                 std::vector<double> all(static_cast<std::size_t>(ranks), 0.0);
                 MPI_Allgather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE,
                               bench::mpi::harness());
                 double slowest = wall;
                 MPI_Allreduce(&wall, &slowest, 1, MPI_DOUBLE, MPI_MAX, bench::mpi::harness());
                 state.SetIterationTime(slowest);
                 for (std::size_t r = 0; r < cpu.size(); ++r) cpu[r] += all[r];
                 pct += 100.0 * all[0] / 1e3 / wall;
               }
               const auto n = static_cast<double>(state.iterations());
               for (std::size_t r = 0; r < cpu.size(); ++r) {
                 state.counters["cpu_ms_rank" + std::to_string(r)] = cpu[r] / n;
               }
               state.counters["cpu_ms"] = cpu[0] / n;
               state.counters["cpu_pct_rank0"] = pct / n;
               state.counters["ranks"] = ranks;
             })
      ->Unit(benchmark::kMillisecond)
      ->Iterations(5)
      ->UseManualTime();
}

}  // namespace bench::held_message
