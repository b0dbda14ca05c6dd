// Binary tree: OpenMP tasks from one thread (`single`), task i with
// depend(in: its parent's slot) and depend(out: its own), then taskwait.
#include <omp.h>

#include <vector>

#include "binary_tree/binary_tree.hpp"

namespace {

using bench::binary_tree::tasks;

auto setup() {
  return [](bench::binary_tree::marks& m) {
    std::vector<char> dep(tasks);
    [[maybe_unused]] char* d = dep.data();  // only named in depend clauses
#pragma omp parallel num_threads(bench::workers) shared(m) firstprivate(d)
#pragma omp single
    {
#pragma omp task depend(out : d[0]) shared(m)
      m.mark(0);
      for (std::size_t i = 1; i < tasks; ++i) {
#pragma omp task depend(in : d[(i - 1) / 2]) depend(out : d[i]) shared(m) firstprivate(i)
        m.mark(i);
      }
#pragma omp taskwait
    }
  };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::binary_tree::add("task_depend", setup); });

}  // namespace
