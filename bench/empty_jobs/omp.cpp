// Empty jobs: OpenMP, N `task`s created by one thread (`single`), then
// `taskwait`, in a parallel region of 2 threads. Both threads run tasks; a
// long queue makes libgomp run new tasks at once on the creating thread.
#include <omp.h>

#include "empty_jobs/empty_jobs.hpp"

namespace {

auto setup() {
  return [](std::int64_t n) {
#pragma omp parallel num_threads(bench::workers) firstprivate(n)
#pragma omp single
    {
      for (std::int64_t i = 0; i < n; ++i) {
#pragma omp task
        bench::count_job();
      }
#pragma omp taskwait
    }
  };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::empty_jobs::add("task", bench::empty_jobs::run_by::any_thread, setup);
});

}  // namespace
