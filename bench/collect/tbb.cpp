// Results in order: oneTBB inside a task_arena of 2 threads (the calling
// thread joins the arena and works). replicate: a task_group with a task
// per result, each writing its own place of a vector sized first; map:
// parallel_for with the default auto_partitioner.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <memory>

#include "collect/collect.hpp"

namespace {

namespace co = bench::collect;
using range = tbb::blocked_range<std::size_t>;

std::shared_ptr<tbb::task_arena> make_arena() {
  auto arena = std::make_shared<tbb::task_arena>(bench::workers);
  arena->initialize();
  return arena;
}

// n tasks, task i storing f() at place i.
template <class F>
co::results replicate(tbb::task_arena& arena, std::size_t n, F f) {
  co::results r(n);
  arena.execute([&] {
    tbb::task_group g;
    for (std::size_t i = 0; i < n; ++i) g.run([&r, &f, i] { r[i] = f(); });
    g.wait();
  });
  return r;
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  co::add_replicate_fib("task_group", [] {
    return [arena = make_arena()] {
      return replicate(*arena, co::replicate_jobs, [] { return co::fib(co::replicate_fib_n); });
    };
  });
  co::add_replicate_sum("task_group", [] {
    return [arena = make_arena()] {
      const std::vector<co::value>& list = co::sum_list();
      return replicate(*arena, co::replicate_jobs, [&list] { return co::sum(list); });
    };
  });
  co::add_map_fib("parallel_for", [] {
    return [arena = make_arena()] {
      const std::vector<std::uint64_t>& in = co::fib_inputs();
      co::results r(in.size());
      arena->execute([&] {
        tbb::parallel_for(range(0, in.size()), [&](const range& part) {
          for (std::size_t i = part.begin(); i < part.end(); ++i) r[i] = co::fib(in[i]);
        });
      });
      return r;
    };
  });
  co::add_map_sum("parallel_for", [] {
    return [arena = make_arena()] {
      const std::vector<std::vector<co::value>>& in = co::sum_lists();
      co::results r(in.size());
      arena->execute([&] {
        tbb::parallel_for(range(0, in.size()), [&](const range& part) {
          for (std::size_t i = part.begin(); i < part.end(); ++i) r[i] = co::sum(in[i]);
        });
      });
      return r;
    };
  });
});

}  // namespace
