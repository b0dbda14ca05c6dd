// OpenMP's counterpart of submitting n empty jobs from one thread: a parallel
// region of bench::workers threads, one of which creates n `task`s (`single`)
// and waits for them (`taskwait`). Both threads run tasks; past a queue
// length libgomp runs new tasks at once on the creating thread. Include it
// only from files compiled with OpenMP.
#pragma once

#include <omp.h>

#include <cstdint>

#include "common/job_counter.hpp"
#include "common/registry.hpp"

namespace bench {

inline void omp_empty_tasks(std::int64_t n) {
#pragma omp parallel num_threads(bench::workers) firstprivate(n)
#pragma omp single
  {
    for (std::int64_t i = 0; i < n; ++i) {
#pragma omp task
      bench::count_job();
    }
#pragma omp taskwait
  }
}

}  // namespace bench
