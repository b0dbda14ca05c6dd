// Tiled Cholesky factorisation A = L L^T written as a data flow: the loops
// are the textbook sequential algorithm (tiled_cholesky.hpp), each tile
// kernel is a task that declares the tiles it reads and writes, and weft
// runs them in parallel wherever the declarations allow. Checked by the
// residual ||A - L L^T||_F / ||A||_F on a random symmetric positive
// definite matrix.
//
// Needs OpenBLAS (CBLAS) and LAPACKE: Debian's libopenblas-dev and
// liblapacke-dev, installed by scripts/deps.sh.
#include <cstdio>
#include <weft/weft.hpp>

#include "tiled_cholesky.hpp"

int main() {
  openblas_set_num_threads(1);  // the parallelism comes from the tasks
  const int tiles = 8;
  const int b = 64;
  example::tiled_matrix m(tiles, b);
  const std::vector<double> a = example::random_spd(m.size());
  m.assign(a);

  weft::pool pool{{.threads = 2}};
  weft::flow flow{pool};
  example::emplace_cholesky(flow, m);
  flow.wait();  // rethrows the first exception a task threw

  const double residual = example::residual(a, m);
  std::printf("cholesky %dx%d in %dx%d tiles: residual %.3e\n", m.size(), m.size(), tiles, tiles,
              residual);
  return residual < 1e-10 ? 0 : 1;
}
