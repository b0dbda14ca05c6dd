// Distributed tiled Cholesky (issue 14): the factorisation of
// cholesky/cholesky.hpp (the same matrix, tiles, kernels and program
// order) run by several MPI processes, each with workers_per_rank()
// workers (1 with 2 ranks and the default WEFT_BENCH_WORKERS=2), under
// `mpirun -np 2`. Every library gets the same decomposition:
//
//   owner(i, j, ranks): tile (i, j) (i >= j) belongs to rank
//   (i % P) * Q + (j % Q) on a P x Q grid of processes, P the largest
//   divisor of ranks with P * P <= ranks (grid_of). For 2 ranks, P = 1 and
//   Q = 2: the tile columns alternate between the ranks (owner = j % 2).
//   On 16 x 16 tiles that splits the work exactly in half (each rank's
//   kernels add up to the same flops), where P = 2, Q = 1 (rows
//   alternating) gives one rank 21% more than the other, for the same
//   traffic.
//
// A task runs on the rank that owns the tile it writes (owner computes), so
// a tile written on one rank and read on another must be sent there: each
// version of a tile once to each other rank that reads it, at least.
// needed() counts those transfers, the least any library must send.
//
// Every rank holds the whole tiled matrix (simple, and no library needs to
// allocate a remote tile's copy): a library reads and writes its own tiles
// in place and may receive the others' into the local copies. After a
// factorisation, tile (i, j) is only required to be right on its owner.
//
// One timed repetition (fixed iterations: every rank must run the loop as
// many times, so Google Benchmark's min_time cannot choose; see
// iterations()), for each iteration on every rank:
//
//   1. the tiles start from a fresh copy of A                  (untimed)
//   2. MPI_Barrier on the harness's communicator
//   3. factorise: submission, execution, transfers and waiting (timed)
//   4. the iteration's time is the largest of the ranks'
//      (MPI_Allreduce MAX), given to Google Benchmark as manual time
//   5. the owners send their tiles to rank 0, which checks
//      ||A - L Lᵀ||_F / ||A||_F < 1e-10 and the potrf failures of every
//      rank; every rank learns the verdict, and a failure fails the
//      benchmark on all of them                                 (untimed)
//
// Counters (rank 0 reports): gflops, tile, ranks; per factorisation, what
// the processes sent to one another during step 3, counted by MPI's
// profiling interface (common/mpi.hpp), so the same way for every library:
// bytes_sent (all ranks), bytes_sent_rank<r> (rank r's), messages_sent
// (all ranks, a library's control messages included), and bytes_needed /
// transfers_needed (needed(): the tile data the decomposition forces);
// copies_peak, for a variant that tracks it (outcome), the most received
// tile copies any rank held at once in any factorisation.
//
// Name: "cholesky_mpi/<N>/<variant>" (manual time per factorisation).
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "cholesky/cholesky.hpp"
#include "common/check.hpp"
#include "common/mpi.hpp"
#include "common/registry.hpp"

namespace bench::cholesky_mpi {

using cholesky::tiled_matrix;

// The process grid: p rows by q columns of ranks.
struct grid {
  int p;
  int q;
};

inline grid grid_of(int ranks) noexcept {
  int p = 1;
  for (int d = 1; d * d <= ranks; ++d) {
    if (ranks % d == 0) p = d;
  }
  return {p, ranks / p};
}

// The rank that owns tile (i, j), i >= j, among `ranks` ranks (2D block
// cyclic on grid_of(ranks)). Every variant places its tiles and tasks with
// this function.
inline int owner(int i, int j, int ranks) noexcept {
  const grid g = grid_of(ranks);
  return (i % g.p) * g.q + (j % g.q);
}

// The tile transfers that owner-computes on this decomposition cannot
// avoid: every (tile, version, rank) where a task on `rank` reads that
// version of a tile another rank owns, each once.
struct volume {
  std::uint64_t transfers = 0;
  std::uint64_t bytes = 0;
};

inline volume needed(int nt, int b, int ranks) {
  std::vector<int> version(static_cast<std::size_t>(nt) * static_cast<std::size_t>(nt), 0);
  auto index = [nt](int i, int j) {
    return static_cast<std::size_t>(j) * static_cast<std::size_t>(nt) + static_cast<std::size_t>(i);
  };
  std::set<std::tuple<std::size_t, int, int>> sent;  // tile, version, destination
  cholesky::for_each_task(nt, [&](const cholesky::task& t) {
    const cholesky::footprint f = cholesky::footprint_of(t);
    const int runs_on = owner(f.write.i, f.write.j, ranks);
    for (int r = 0; r < f.reads; ++r) {
      const auto tile = index(f.read[r].i, f.read[r].j);
      if (owner(f.read[r].i, f.read[r].j, ranks) != runs_on) {
        sent.emplace(tile, version[tile], runs_on);
      }
    }
    ++version[index(f.write.i, f.write.j)];
  });
  const auto tile_bytes =
      static_cast<std::uint64_t>(b) * static_cast<std::uint64_t>(b) * sizeof(double);
  return {sent.size(), sent.size() * tile_bytes};
}

// Google Benchmark's iterations per repetition: WEFT_BENCH_ITERATIONS, else
// 2 at N = 4096 and 5 at N = 2048 (on 2 cores, some 5 s and 3 s per
// repetition with the checks).
inline int iterations(const cholesky::size sz) {
  return static_cast<int>(
      whole_number_from_environment("WEFT_BENCH_ITERATIONS", sz.n >= 4096 ? 2 : 5, 1000));
}

// Brings every tile to rank 0 from its owner (on the harness's
// communicator: the library under test never sees these messages).
inline void gather_to_rank0(tiled_matrix& m) {
  const int me = mpi::rank();
  const int ranks = mpi::ranks();
  const int count = m.b() * m.b();
  for (int j = 0; j < m.nt(); ++j) {
    for (int i = j; i < m.nt(); ++i) {
      const int from = owner(i, j, ranks);
      if (from == 0) continue;
      const int tag = j * m.nt() + i;
      if (me == from) {
        MPI_Send(m.at(i, j).data(), count, MPI_DOUBLE, 0, tag, mpi::harness());
      } else if (me == 0) {
        MPI_Recv(m.at(i, j).data(), count, MPI_DOUBLE, from, tag, mpi::harness(),
                 MPI_STATUS_IGNORE);
      }
    }
  }
}

// Step 5: true on every rank when rank 0 found the factor right. Resets the
// potrf failure counts.
inline bool verify(benchmark::State& state, const tiled_matrix& a, tiled_matrix& l) {
  gather_to_rank0(l);
  int failures = cholesky::potrf_failures.exchange(0, std::memory_order_relaxed);
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, mpi::harness());
  int ok = 1;
  if (mpi::rank() == 0) {
    cholesky::potrf_failures.store(failures, std::memory_order_relaxed);
    ok = cholesky::verify(state, a, l) ? 1 : 0;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, mpi::harness());
  if (ok == 0 && mpi::rank() != 0) check(state, false, "the check on rank 0 failed");
  return ok != 0;
}

// The first non-zero error code of any rank (its rank in `rank`), or 0.
inline int first_error(int error, int& rank) {
  std::vector<int> errors(static_cast<std::size_t>(mpi::ranks()));
  MPI_Allgather(&error, 1, MPI_INT, errors.data(), 1, MPI_INT, mpi::harness());
  const auto it = std::find_if(errors.begin(), errors.end(), [](int e) { return e != 0; });
  rank = static_cast<int>(it - errors.begin());
  return it == errors.end() ? 0 : *it;
}

// What a factorisation reports: the library's error code (0: none), and,
// if the variant tracks it, the most received tile copies this rank held at
// once (-1: not tracked).
struct outcome {
  int error = 0;
  int copies_peak = -1;
};

// One benchmark run of a variant on every rank (steps 1 to 5 per
// iteration), then its counters.
inline void measure(benchmark::State& state, const cholesky::size sz,
                    const std::function<outcome(tiled_matrix&)>& factorise) {
  const int ranks = mpi::ranks();
  const tiled_matrix a = cholesky::make_spd(sz.n, sz.b);
  tiled_matrix work(sz.n, sz.b);
  cholesky::potrf_failures.store(0, std::memory_order_relaxed);
  double seconds = 0.0;
  // Per rank: bytes, then messages.
  std::vector<std::uint64_t> traffic(2 * static_cast<std::size_t>(ranks), 0);
  std::vector<std::uint64_t> all(traffic.size());
  int copies_peak = -1;
  for (auto _ : state) {
    work.copy_from(a);
    MPI_Barrier(mpi::harness());
    const mpi::traffic before = mpi::sent();
    const auto start = std::chrono::steady_clock::now();
    const outcome result = factorise(work);
    const auto stop = std::chrono::steady_clock::now();
    const mpi::traffic after = mpi::sent();
    double s = std::chrono::duration<double>(stop - start).count();
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, mpi::harness());
    state.SetIterationTime(s);
    seconds += s;
    const std::uint64_t mine[2] = {after.bytes - before.bytes, after.messages - before.messages};
    MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, mpi::harness());
    for (std::size_t k = 0; k < all.size(); ++k) traffic[k] += all[k];
    int peak = result.copies_peak;
    MPI_Allreduce(MPI_IN_PLACE, &peak, 1, MPI_INT, MPI_MAX, mpi::harness());
    copies_peak = std::max(copies_peak, peak);
    int rank = 0;
    const int code = first_error(result.error, rank);
    if (!check_equal(state, code, 0, "the library's error code on rank " + std::to_string(rank))) {
      return;
    }
    if (!verify(state, a, work)) return;
  }
  const auto per_run = static_cast<double>(state.iterations());
  state.counters["gflops"] = cholesky::gflops(sz.n) * per_run / seconds;
  state.counters["tile"] = sz.b;
  state.counters["ranks"] = ranks;
  double bytes = 0.0;
  double messages = 0.0;
  for (int r = 0; r < ranks; ++r) {
    const auto rank_bytes = static_cast<double>(traffic[2 * static_cast<std::size_t>(r)]);
    state.counters["bytes_sent_rank" + std::to_string(r)] = rank_bytes / per_run;
    bytes += rank_bytes;
    messages += static_cast<double>(traffic[2 * static_cast<std::size_t>(r) + 1]);
  }
  state.counters["bytes_sent"] = bytes / per_run;
  state.counters["messages_sent"] = messages / per_run;
  const volume least = needed(sz.n / sz.b, sz.b, ranks);
  state.counters["bytes_needed"] = static_cast<double>(least.bytes);
  state.counters["transfers_needed"] = static_cast<double>(least.transfers);
  if (copies_peak >= 0) state.counters["copies_peak"] = copies_peak;
}

// Registers "cholesky_mpi/<N>/<variant>" for both sizes. `setup(b)` runs on
// every rank at the start of each benchmark run (a runtime, a pool, the
// BLAS thread count) and returns a callable that factorises a tiled_matrix
// with tiles of order b in place, as described above: on return, every
// tile this rank owns (owner(i, j, mpi::ranks())) holds its part of L and
// all of this rank's transfers are complete. The callable returns void, an
// int that is 0 when the library reported no error, or an outcome.
template <class Setup>
void add(std::string_view variant, Setup setup) {
  for (const cholesky::size sz : cholesky::sizes) {
    bench::add("cholesky_mpi", std::to_string(sz.n), variant,
               [setup, sz](benchmark::State& state) {
                 auto factorise = setup(sz.b);
                 measure(state, sz, [&factorise](tiled_matrix& m) {
                   using result = decltype(factorise(m));
                   if constexpr (std::is_void_v<result>) {
                     factorise(m);
                     return outcome{};
                   } else if constexpr (std::is_same_v<result, outcome>) {
                     return factorise(m);
                   } else {
                     return outcome{static_cast<int>(factorise(m))};
                   }
                 });
               })
        ->Unit(benchmark::kMillisecond)
        ->Iterations(iterations(sz))
        ->UseManualTime();
  }
}

}  // namespace bench::cholesky_mpi
