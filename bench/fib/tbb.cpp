// fib: oneTBB, one task_group per call with both children run as tasks,
// inside a task_arena of 2 threads (the caller and one TBB worker).
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <memory>

#include "fib/fib.hpp"

namespace {

int fib(int n) {
  if (n < 2) return n;
  int a = 0;
  int b = 0;
  tbb::task_group g;
  g.run([&] { a = fib(n - 1); });
  g.run([&] { b = fib(n - 2); });
  g.wait();
  return a + b;
}

auto setup() {
  auto arena = std::make_unique<tbb::task_arena>(bench::workers);
  arena->initialize();
  return [arena = std::move(arena)](int n) { return arena->execute([n] { return fib(n); }); };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::fib::add_timing("task_group", setup); });
const int peak_rss = bench::on_startup(bench::suite::peak_rss,
                                       [] { bench::fib::add_peak_rss("task_group", setup); });

}  // namespace
