// fib: OpenMP, both children of every call as `task`s joined by `taskwait`,
// in a parallel region of 2 threads (the caller and one OpenMP thread).
// libgomp may run a task at once instead of queueing it when its queue is
// long; that is the runtime's own policy and stays in.
#include <omp.h>

#include "fib/fib.hpp"

namespace {

int fib(int n) {
  if (n < 2) return n;
  int a = 0;
  int b = 0;
#pragma omp task shared(a) firstprivate(n)
  a = fib(n - 1);
#pragma omp task shared(b) firstprivate(n)
  b = fib(n - 2);
#pragma omp taskwait
  return a + b;
}

auto setup() {
  return [](int n) {
    int result = 0;
#pragma omp parallel num_threads(bench::workers) shared(result) firstprivate(n)
#pragma omp single
    result = fib(n);
    return result;
  };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::fib::add_timing("task", setup); });
const int peak_rss =
    bench::on_startup(bench::suite::peak_rss, [] { bench::fib::add_peak_rss("task", setup); });

}  // namespace
