// Hipe's benchmarks: oneTBB inside a task_arena of 2 threads (the calling
// thread joins the arena and works while it waits). compute: K
// task_group::run, then wait; memory: task_group::run per job from the
// calling thread, then wait.
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <memory>

#include "hipe/hipe.hpp"

namespace {

namespace hp = bench::hipe;

// Started before the first timed run, which would otherwise also pay for
// starting oneTBB's threads.
struct started_arena : tbb::task_arena {
  started_arena() : tbb::task_arena(bench::workers) { initialize(); }
};

const int timing = bench::on_startup(bench::suite::timing, [] {
  hp::add_compute("task_group", [] {
    return [arena = std::make_unique<started_arena>()](double* m, std::size_t jobs) {
      arena->execute([m, jobs] {
        tbb::task_group g;
        for (std::size_t k = 0; k < jobs; ++k)
          g.run([m, k, jobs] { hp::compute_share(m, k, jobs); });
        g.wait();
      });
    };
  });
  hp::add_memory("task_group", [] {
    return [arena = std::make_unique<started_arena>()](std::int64_t* sums) {
      arena->execute([sums] {
        tbb::task_group g;
        for (std::int64_t i = 0; i < hp::memory_jobs; ++i)
          g.run([sums, i] { hp::memory_job(sums, i); });
        g.wait();
      });
    };
  });
});

}  // namespace
