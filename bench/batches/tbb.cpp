// Batches: oneTBB, in a task_arena of bench::workers threads. oneTBB has no
// batch submission, so every k is task_group::run one by one (the row to
// hold weft's batches against); futures are task_group runs that store
// their results into a vector, then wait and a sum.
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "batches/batches.hpp"

namespace {

auto jobs_setup() {
  auto arena = std::make_unique<tbb::task_arena>(bench::workers);
  arena->initialize();
  return [arena = std::move(arena)](std::int64_t n, std::int64_t /*k*/) {
    arena->execute([n] {
      tbb::task_group g;
      for (std::int64_t i = 0; i < n; ++i) g.run([] { bench::count_job(); });
      g.wait();
    });
  };
}

auto futures_setup() {
  auto arena = std::make_unique<tbb::task_arena>(bench::workers);
  arena->initialize();
  return [arena = std::move(arena)](std::int64_t n) {
    std::vector<std::int64_t> results(static_cast<std::size_t>(n));
    arena->execute([n, &results] {
      tbb::task_group g;
      for (std::int64_t i = 0; i < n; ++i) {
        g.run([i, &results] {
          results[static_cast<std::size_t>(i)] = bench::batches::future_value(i);
        });
      }
      g.wait();
    });
    return bench::batches::sum(results);
  };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::batches::add_jobs("task_group", {1, 10, 1000}, jobs_setup);
  bench::batches::add_futures("task_group", futures_setup);
});

}  // namespace
