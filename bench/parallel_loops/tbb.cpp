// Parallel loops: oneTBB's parallel_reduce and parallel_for with the default
// auto_partitioner, inside a task_arena of 2 threads (the calling thread
// joins the arena and works).
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_reduce.h>
#include <oneapi/tbb/task_arena.h>

#include <functional>
#include <memory>

#include "parallel_loops/parallel_loops.hpp"

namespace {

namespace loops = bench::parallel_loops;
using range = tbb::blocked_range<std::int64_t>;

std::shared_ptr<tbb::task_arena> make_arena() {
  auto arena = std::make_shared<tbb::task_arena>(bench::workers);
  arena->initialize();
  return arena;
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  loops::add_sum("parallel_reduce", [] {
    return [arena = make_arena()](const std::vector<double>& v) {
      return arena->execute([&v] {
        const double* d = v.data();
        return tbb::parallel_reduce(
            range(0, static_cast<std::int64_t>(v.size())), 0.0,
            [d](const range& r, double s) {
              for (std::int64_t i = r.begin(); i < r.end(); ++i) s += d[i];
              return s;
            },
            std::plus<>{});
      });
    };
  });
  loops::add_balanced("parallel_for", [] {
    return [arena = make_arena()](std::vector<double>& x) {
      arena->execute([&x] {
        double* d = x.data();
        tbb::parallel_for(range(0, static_cast<std::int64_t>(x.size())), [d](const range& r) {
          for (std::int64_t i = r.begin(); i < r.end(); ++i) loops::bump(d[i]);
        });
      });
    };
  });
  loops::add_unbalanced("parallel_for", [] {
    return [arena = make_arena()](std::vector<std::uint64_t>& out) {
      arena->execute([&out] {
        std::uint64_t* o = out.data();
        tbb::parallel_for(range(0, loops::unbalanced_n), [o](const range& r) {
          for (std::int64_t i = r.begin(); i < r.end(); ++i) o[i] = loops::unbalanced_work(i);
        });
      });
    };
  });
  loops::add_slow("parallel_for", [] {
    return [arena = make_arena()](std::vector<unsigned char>& marks) {
      arena->execute([&marks] {
        tbb::parallel_for(range(0, loops::slow_n), [&marks](const range& r) {
          for (std::int64_t i = r.begin(); i < r.end(); ++i) loops::slow_element(marks, i);
        });
      });
    };
  });
});

}  // namespace
