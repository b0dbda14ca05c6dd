// Empty jobs: oneTBB, N task_group::run from the calling thread, then
// task_group::wait (which also runs jobs), in a task_arena of 2 threads.
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <memory>

#include "empty_jobs/empty_jobs.hpp"

namespace {

auto setup() {
  auto arena = std::make_unique<tbb::task_arena>(bench::workers);
  arena->initialize();
  return [arena = std::move(arena)](std::int64_t n) {
    arena->execute([n] {
      tbb::task_group g;
      for (std::int64_t i = 0; i < n; ++i) g.run([] { bench::count_job(); });
      g.wait();
    });
  };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::empty_jobs::add("task_group", bench::empty_jobs::run_by::any_thread, setup);
});

}  // namespace
