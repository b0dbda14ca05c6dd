// Tiled Cholesky: weft's data-flow front end on a pool of 2 workers. The
// caller emplaces one task per kernel in program order, declaring the tiles
// it reads (weft::read) and the one it writes (weft::write); weft::flow
// derives the dependencies from those declarations, and the caller waits
// with flow::wait. BLAS on one thread.
#include <memory>
#include <weft/weft.hpp>

#include "cholesky/cholesky.hpp"

namespace {

using bench::cholesky::kernel;
using bench::cholesky::tile;
using bench::cholesky::tiled_matrix;

// The names show in a trace of the run (scripts/bench.sh draws one); on an
// untraced pool, name() is a call that returns at once.
void factorise(weft::pool& pool, tiled_matrix& m) {
  const int b = m.b();
  weft::flow f{pool};
  bench::cholesky::for_each_task(m.nt(), [&](const bench::cholesky::task& t) {
    switch (t.kind) {
      case kernel::potrf:
        f.emplace([b](tile& akk) { bench::cholesky::potrf(akk.data(), b); },
                  weft::write(m.at(t.k, t.k)))
            .name("potrf");
        break;
      case kernel::trsm:
        f.emplace(
             [b](const tile& akk, tile& aik) { bench::cholesky::trsm(akk.data(), aik.data(), b); },
             weft::read(m.at(t.k, t.k)), weft::write(m.at(t.i, t.k)))
            .name("trsm");
        break;
      case kernel::syrk:
        f.emplace(
             [b](const tile& aik, tile& aii) { bench::cholesky::syrk(aik.data(), aii.data(), b); },
             weft::read(m.at(t.i, t.k)), weft::write(m.at(t.i, t.i)))
            .name("syrk");
        break;
      case kernel::gemm:
        f.emplace([b](const tile& aik, const tile& ajk,
                      tile& aij) { bench::cholesky::gemm(aik.data(), ajk.data(), aij.data(), b); },
                  weft::read(m.at(t.i, t.k)), weft::read(m.at(t.j, t.k)),
                  weft::write(m.at(t.i, t.j)))
            .name("gemm");
        break;
    }
  });
  f.wait();
}

auto setup(int /*b*/) {
  bench::cholesky::set_blas_threads(1);
  auto pool = std::make_unique<weft::pool>(weft::pool_options{.threads = bench::workers});
  return [pool = std::move(pool)](tiled_matrix& m) { factorise(*pool, m); };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::cholesky::add("flow", setup); });

}  // namespace
