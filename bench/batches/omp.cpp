// Batches: OpenMP, in a parallel region of bench::workers threads; one
// thread creates `task`s (`single`), then `taskwait`. OpenMP has no batch
// submission either, so every k is one task per job; a batch of k as one
// `taskloop` would be one task per chunk, not k jobs. Futures are tasks
// that store their results into a vector, then taskwait and a sum.
#include <omp.h>

#include <cstdint>
#include <vector>

#include "batches/batches.hpp"
#include "common/omp_tasks.hpp"

namespace {

auto jobs_setup() {
  return [](std::int64_t n, std::int64_t /*k*/) { bench::omp_empty_tasks(n); };
}

auto futures_setup() {
  return [](std::int64_t n) {
    std::vector<std::int64_t> results(static_cast<std::size_t>(n));
    std::int64_t* out = results.data();
#pragma omp parallel num_threads(bench::workers) firstprivate(n, out)
#pragma omp single
    {
      for (std::int64_t i = 0; i < n; ++i) {
#pragma omp task firstprivate(i)
        out[i] = bench::batches::future_value(i);
      }
#pragma omp taskwait
    }
    return bench::batches::sum(results);
  };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::batches::add_jobs("task", {1, 10, 1000}, jobs_setup);
  bench::batches::add_futures("task", futures_setup);
});

}  // namespace
