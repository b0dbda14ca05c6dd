// Hipe's benchmarks: OpenMP, a parallel region of 2 threads (the calling
// thread is one of them) in which one thread (`single`) creates a `task`
// per job; the barrier at the end of `single` waits for them, and the
// other thread runs tasks meanwhile.
#include "hipe/hipe.hpp"

namespace {

namespace hp = bench::hipe;

const int timing = bench::on_startup(bench::suite::timing, [] {
  hp::add_compute("task", [] {
    return [](double* m, std::size_t jobs) {
#pragma omp parallel num_threads(bench::workers) firstprivate(m, jobs)
#pragma omp single
      for (std::size_t k = 0; k < jobs; ++k) {
#pragma omp task firstprivate(k)
        hp::compute_share(m, k, jobs);
      }
    };
  });
  hp::add_memory("task", [] {
    return [](std::int64_t* sums) {
#pragma omp parallel num_threads(bench::workers) firstprivate(sums)
#pragma omp single
      for (std::int64_t i = 0; i < hp::memory_jobs; ++i) {
#pragma omp task firstprivate(i)
        hp::memory_job(sums, i);
      }
    };
  });
});

}  // namespace
