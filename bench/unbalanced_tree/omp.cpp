// Unbalanced tree: OpenMP, both halves of every split as `task`s joined by
// `taskwait`, in a parallel region of 2 threads (the caller and one OpenMP
// thread). libgomp may run a task at once instead of queueing it when its
// queue is long; that is the runtime's own policy and stays in.
#include <omp.h>

#include "unbalanced_tree/unbalanced_tree.hpp"

namespace {

struct task_fork {
  template <class F, class G>
  std::uint64_t operator()(const F& f, const G& g) const {
    std::uint64_t a = 0;
    std::uint64_t b = 0;
#pragma omp task shared(a, f)
    a = f();
#pragma omp task shared(b, g)
    b = g();
#pragma omp taskwait
    return a + b;
  }
};

auto setup() {
  return [](std::int64_t size) {
    std::uint64_t result = 0;
#pragma omp parallel num_threads(bench::workers) shared(result) firstprivate(size)
#pragma omp single
    result = bench::unbalanced_tree::tree(0, size, task_fork{});
    return result;
  };
}

const int timing = bench::on_startup(bench::suite::timing,
                                     [] { bench::unbalanced_tree::add_timing("task", setup); });

}  // namespace
