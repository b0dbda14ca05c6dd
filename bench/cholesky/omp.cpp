// Tiled Cholesky: OpenMP tasks in one parallel region of 2 threads; one
// thread (`single`) creates the tasks in program order with
// depend(in: ...) on the tiles a kernel reads and depend(inout: ...) on the
// tile it writes, named by the tile's first element; the region's closing
// barrier waits for all of them. BLAS on one thread.
#include <omp.h>

#include "cholesky/cholesky.hpp"

namespace {

using bench::cholesky::kernel;
using bench::cholesky::tiled_matrix;

void factorise(tiled_matrix& m) {
  const int b = m.b();
#pragma omp parallel num_threads(bench::workers) shared(m) firstprivate(b)
#pragma omp single
  bench::cholesky::for_each_task(m.nt(), [&m, b](const bench::cholesky::task& t) {
    const bench::cholesky::accesses a = bench::cholesky::accesses_of(m, t);
    double* w = a.write->data();
    const double* r0 = a.reads > 0 ? a.read[0]->data() : nullptr;
    const double* r1 = a.reads > 1 ? a.read[1]->data() : nullptr;
    switch (t.kind) {
      case kernel::potrf:
#pragma omp task depend(inout : w[0]) firstprivate(w, b)
        bench::cholesky::potrf(w, b);
        break;
      case kernel::trsm:
#pragma omp task depend(in : r0[0]) depend(inout : w[0]) firstprivate(r0, w, b)
        bench::cholesky::trsm(r0, w, b);
        break;
      case kernel::syrk:
#pragma omp task depend(in : r0[0]) depend(inout : w[0]) firstprivate(r0, w, b)
        bench::cholesky::syrk(r0, w, b);
        break;
      case kernel::gemm:
#pragma omp task depend(in : r0[0], r1[0]) depend(inout : w[0]) firstprivate(r0, r1, w, b)
        bench::cholesky::gemm(r0, r1, w, b);
        break;
    }
  });
}

auto setup(int /*b*/) {
  bench::cholesky::set_blas_threads(1);
  return factorise;
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::cholesky::add("task_depend", setup); });

}  // namespace
