// Empty jobs: weft, N pool.spawn from the main thread (not a worker, so they
// go through the injector), then pool.wait(), on a pool of 2 workers. The
// main thread only spawns and waits: the check requires that the workers
// ran every job.
#include <memory>
#include <weft/weft.hpp>

#include "empty_jobs/empty_jobs.hpp"

namespace {

auto setup() {
  auto pool = std::make_unique<weft::pool>(weft::pool_options{.threads = bench::workers});
  return [pool = std::move(pool)](std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) pool->spawn([] { bench::count_job(); });
    pool->wait();
  };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::empty_jobs::add("spawn", bench::empty_jobs::run_by::workers_only, setup);
});

}  // namespace
