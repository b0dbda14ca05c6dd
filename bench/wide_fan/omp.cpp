// Wide fan: OpenMP tasks from one thread (`single`): the source with
// depend(out: source), each middle task with depend(in: source), then a
// taskwait and the sink (a depend clause listing 100,000 tasks is not
// practical).
#include <omp.h>

#include "wide_fan/wide_fan.hpp"

namespace {

auto setup() {
  return [](bench::wide_fan::marks& m) {
    char source = 0;
#pragma omp parallel num_threads(bench::workers) shared(m, source)
#pragma omp single
    {
#pragma omp task depend(out : source) shared(source)
      source = 1;
      for (std::int64_t i = 0; i < bench::wide_fan::width; ++i) {
#pragma omp task depend(in : source) shared(m) firstprivate(i)
        m.mark(i);
      }
#pragma omp taskwait
      m.count();
    }
  };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::wide_fan::add("task_depend", setup); });

}  // namespace
