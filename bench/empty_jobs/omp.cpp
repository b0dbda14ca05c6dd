// Empty jobs: OpenMP, N `task`s created by one thread (`single`), then
// `taskwait`, in a parallel region of 2 threads. Both threads run tasks; a
// long queue makes libgomp run new tasks at once on the creating thread.
#include <omp.h>

#include "common/omp_tasks.hpp"
#include "empty_jobs/empty_jobs.hpp"

namespace {

auto setup() {
  return [](std::int64_t n) { bench::omp_empty_tasks(n); };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::empty_jobs::add("task", bench::empty_jobs::run_by::any_thread, setup);
});

}  // namespace
