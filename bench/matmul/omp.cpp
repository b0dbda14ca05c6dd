// Matrix multiplication: OpenMP, two `parallel for` loops over the rows
// (initialise, then multiply) in one parallel region of 2 threads.
#include <omp.h>

#include "matmul/matmul.hpp"

namespace {

auto setup(bench::matmul::matrices& m) {
  return [&m] {
    const auto n = static_cast<long>(m.n);
#pragma omp parallel num_threads(bench::workers) shared(m) firstprivate(n)
    {
#pragma omp for
      for (long i = 0; i < n; ++i) m.init_row(static_cast<std::size_t>(i));
#pragma omp for
      for (long i = 0; i < n; ++i) m.multiply_row(static_cast<std::size_t>(i));
    }
  };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::matmul::add("parallel_for", setup); });

}  // namespace
