// Tiled Cholesky: weft's data-flow front end on a pool of 2 workers. The
// caller emplaces one task per kernel in program order, declaring the tiles
// it reads (weft::read) and the one it writes (weft::write); weft::flow
// derives the dependencies from those declarations, and the caller waits
// with flow::wait. BLAS on one thread.
#include <memory>
#include <weft/weft.hpp>

#include "cholesky/weft_tasks.hpp"

namespace {

using bench::cholesky::tiled_matrix;

void factorise(weft::pool& pool, tiled_matrix& m) {
  weft::flow f{pool};
  bench::cholesky::emplace_tasks(f, m);
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
