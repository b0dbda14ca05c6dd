// Linear chain: OpenMP tasks created by one thread (`single`), each with
// depend(inout: counter), so each waits for the one before; then taskwait.
// OpenMP has no graph to keep, so there is no run-alone variant.
#include <omp.h>

#include "linear_chain/linear_chain.hpp"

namespace {

auto setup_build_run(std::int64_t n) {
  return [n] {
    std::int64_t counter = 0;
#pragma omp parallel num_threads(bench::workers) firstprivate(n) shared(counter)
#pragma omp single
    {
      for (std::int64_t i = 0; i < n; ++i) {
#pragma omp task depend(inout : counter) shared(counter)
        ++counter;
      }
#pragma omp taskwait
    }
    return counter;
  };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::linear_chain::add_build_run("task_depend", setup_build_run);
});

}  // namespace
