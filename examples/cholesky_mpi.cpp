// Tiled Cholesky factorisation A = L L^T across MPI ranks: the same textbook
// loops as examples/blas/cholesky.cpp (examples/blas/tiled_cholesky.hpp),
// run by every rank. The tiles are spread 2D block-cyclically over a P x Q
// grid of ranks; each task runs on the rank that owns the tile it writes,
// and weft::mpi::flow sends the tiles it reads from other ranks (once per
// version). Rank 0 gathers the factor and checks ||A - L L^T||_F / ||A||_F.
//
//   mpirun -np 2 ./example_cholesky_mpi      (examples/CMakeLists.txt runs it so)
//
// Needs OpenBLAS (CBLAS), LAPACKE and an MPI library (Debian's
// libopenblas-dev, liblapacke-dev, libopenmpi-dev, openmpi-bin).
#include <mpi.h>

#include <cstdio>
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
  // Every rank holds every tile: a non-owner's copy is where the versions it
  // receives land. Only the owner's copy is the truth.
  example::tiled_matrix m(tiles, b);
  const std::vector<double> a = example::random_spd(m.size());
  m.assign(a);

  weft::pool pool{{.threads = 1}};
  const grid g(ranks);
  weft::mpi::flow flow{pool, MPI_COMM_WORLD};
  // What travels is a tile's doubles: the flow gets a (pointer, size) view.
  for (int i = 0; i < tiles; ++i) {
    for (int j = 0; j <= i; ++j) {
      example::tile& t = m.at(i, j);
      flow.register_data(t, g.owner(i, j), t.data.data(), t.data.size() * sizeof(double));
    }
  }
  example::emplace_cholesky(flow, m);
  for (int i = 0; i < tiles; ++i) {
    for (int j = 0; j <= i; ++j) flow.gather(m.at(i, j), 0);
  }
  flow.wait();  // every rank; rethrows a task's exception (remote_error on the other ranks)
  const weft::mpi::flow_stats st = flow.statistics();
  std::printf("rank %d: %llu tasks here, sent %llu tiles (%llu bytes), received %llu\n", rank,
              static_cast<unsigned long long>(st.local_tasks),
              static_cast<unsigned long long>(st.messages_sent),
              static_cast<unsigned long long>(st.bytes_sent),
              static_cast<unsigned long long>(st.messages_received));
  if (rank != 0) return 0;
  const double residual = example::residual(a, m);
  std::printf("cholesky %dx%d in %dx%d tiles on %d ranks (%dx%d grid): residual %.3e\n", m.size(),
              m.size(), tiles, tiles, ranks, g.p, g.q, residual);
  return residual < 1e-10 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return example::mpi_main(argc, argv, "cholesky_mpi", run); }
