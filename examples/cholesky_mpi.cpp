// Tiled Cholesky factorisation A = L L^T across MPI ranks: the same textbook
// loops as examples/blas/cholesky.cpp (examples/blas/tiled_cholesky.hpp),
// run by every rank. The tiles are spread 2D block-cyclically over a P x Q
// grid of ranks; each task runs on the rank that owns the tile it writes,
// and weft::mpi::flow sends the tiles it reads from other ranks (once per
// version). Once a step has been emplaced, nothing reads its panel again, so
// the ranks drop their copies of it (drop_copies), and a rank holds its own
// tiles plus the panels in flight. Rank 0 gathers the factor and checks
// ||A - L L^T||_F / ||A||_F.
//
//   mpirun -np 2 ./example_cholesky_mpi      (examples/CMakeLists.txt runs it so)
//
// Needs OpenBLAS (CBLAS), LAPACKE and an MPI library (Debian's
// libopenblas-dev, liblapacke-dev, libopenmpi-dev, openmpi-bin).
#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <span>
#include <vector>
#include <weft/mpi.hpp>

#include "blas/tiled_cholesky.hpp"
#include "mpi_main.hpp"

namespace {

// 2D block-cyclic: tile (i, j) belongs to rank (i mod P) * Q + (j mod Q) of
// a P x Q grid, P the largest divisor of the rank count up to its root.
struct grid {
  int p;
  int q;
  explicit grid(int ranks) : p(1), q(ranks) {
    for (int d = 1; d * d <= ranks; ++d) {
      if (ranks % d == 0) {
        p = d;
        q = ranks / d;
      }
    }
  }
  [[nodiscard]] int owner(int i, int j) const { return (i % p) * q + (j % q); }
};

int run() {
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  openblas_set_num_threads(1);  // the parallelism comes from the tasks and ranks
  const int tiles = 8;
  const int b = 64;
  // Every rank holds every tile object, but the doubles only of the tiles
  // it owns or reads: a non-owner's copy is where the versions it receives
  // land, allocated when the first one comes. Only the owner's copy is the
  // truth. (The shared tiled_matrix allocates all; the tiles this rank does
  // not own are dropped before the flow starts.)
  example::tiled_matrix m(tiles, b);
  const std::vector<double> a = example::random_spd(m.size());
  m.assign(a);
  const grid g(ranks);
  const std::size_t doubles = static_cast<std::size_t>(b) * static_cast<std::size_t>(b);
  for (int i = 0; i < tiles; ++i) {
    for (int j = 0; j <= i; ++j) {
      if (g.owner(i, j) != rank) std::vector<double>().swap(m.at(i, j).data);
    }
  }

  // How many tiles' doubles this rank holds now, and at most so far.
  std::atomic<int> held{0};
  std::atomic<int> peak{0};
  auto hold = [&](int change) {
    const int now = held.fetch_add(change, std::memory_order_relaxed) + change;
    int seen = peak.load(std::memory_order_relaxed);
    while (now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
  };
  for (int i = 0; i < tiles; ++i) {
    for (int j = 0; j <= i; ++j) {
      if (g.owner(i, j) == rank) hold(1);
    }
  }

  weft::pool pool{{.threads = 1}};
  weft::mpi::flow flow{pool, MPI_COMM_WORLD};
  // What travels is a tile's doubles: the flow asks for them (a view) at
  // this rank's first send or receive of the tile, allocating them there,
  // and releases a received copy once it is dropped and its readers ran.
  for (int i = 0; i < tiles; ++i) {
    for (int j = 0; j <= i; ++j) {
      flow.register_data(
          m.at(i, j), g.owner(i, j), doubles * sizeof(double),
          [&hold](example::tile& t) {
            if (t.data.empty()) {
              t.data.resize(doubles);
              hold(1);
            }
            return std::as_writable_bytes(std::span{t.data});
          },
          [&hold](example::tile& t) {
            std::vector<double>().swap(t.data);
            hold(-1);
          });
    }
  }
  example::emplace_cholesky(flow, m, [&](int k) {
    for (int i = k; i < tiles; ++i) flow.drop_copies(m.at(i, k));
  });
  flow.wait();  // every rank; rethrows a task's exception (remote_error on the other ranks)
  const int most = peak.load();
  for (int i = 0; i < tiles; ++i) {
    for (int j = 0; j <= i; ++j) flow.gather(m.at(i, j), 0);
  }
  flow.wait();
  const weft::mpi::flow_stats st = flow.statistics();
  std::printf(
      "rank %d: %llu tasks here, sent %llu tiles (%llu bytes), received %llu; held the data of "
      "at most %d of %d tiles at once while factorising\n",
      rank, static_cast<unsigned long long>(st.local_tasks),
      static_cast<unsigned long long>(st.messages_sent),
      static_cast<unsigned long long>(st.bytes_sent),
      static_cast<unsigned long long>(st.messages_received), most, tiles * (tiles + 1) / 2);
  if (rank != 0) return 0;
  const double residual = example::residual(a, m);
  std::printf("cholesky %dx%d in %dx%d tiles on %d ranks (%dx%d grid): residual %.3e\n", m.size(),
              m.size(), tiles, tiles, ranks, g.p, g.q, residual);
  return residual < 1e-10 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return example::mpi_main(argc, argv, "cholesky_mpi", run); }
