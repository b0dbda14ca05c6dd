// Empty jobs: weft, N pool.spawn from the main thread (not a worker, so they
// go through the injector), then pool.wait(), on a pool of 2 workers. The
// main thread only spawns and waits: the check requires that the workers
// ran every job.
//
// spawn_capacity256_run_here: the same into a pool that bounds what outside
// threads queue at 256 and runs the job on the spawning thread when full
// (pool_options::capacity, overflow::run_here), as libgomp throttles the
// omp variant's single task creator (issue 10).
#include <memory>
#include <utility>
#include <weft/weft.hpp>

#include "empty_jobs/empty_jobs.hpp"

namespace {

auto setup_with(weft::pool_options options) {
  options.threads = bench::workers;
  auto pool = std::make_unique<weft::pool>(std::move(options));
  return [pool = std::move(pool)](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) pool->spawn([] { bench::count_job(); });
    pool->wait();
  };
}

auto setup() { return setup_with({}); }

auto setup_throttled() {
  return setup_with({.capacity = 256, .on_full = weft::overflow::run_here});
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::empty_jobs::add("spawn", bench::empty_jobs::run_by::workers_only, setup);
  bench::empty_jobs::add("spawn_capacity256_run_here", bench::empty_jobs::run_by::any_thread,
                         setup_throttled);
});

}  // namespace
