// N-queens: OpenMP, a `task` per free square of the next row of every
// board, joined by `taskwait`, in a parallel region of 2 threads (the
// caller and one OpenMP thread), the empty board in a `single`. libgomp may
// run a task at once instead of queueing it when its queue is long; that is
// the runtime's own policy and stays in.
#include <omp.h>

#include <array>
#include <cstdint>
#include <numeric>

#include "nqueens/nqueens.hpp"

namespace {

struct task_fan {
  template <class Child>
  std::int64_t operator()(int count, const Child& child) const {
    std::array<std::int64_t, bench::nqueens::max_n> sums{};
    for (int i = 0; i < count; ++i) {
#pragma omp task shared(sums, child) firstprivate(i)
      sums[static_cast<std::size_t>(i)] = child(i);
    }
#pragma omp taskwait
    return std::accumulate(sums.begin(), sums.begin() + count, std::int64_t{0});
  }
};

auto setup() {
  return [](int n) {
    std::int64_t result = 0;
#pragma omp parallel num_threads(bench::workers) shared(result) firstprivate(n)
#pragma omp single
    result = bench::nqueens::complete(bench::nqueens::empty_board(n), task_fan{});
    return result;
  };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::nqueens::add_timing("task", setup); });

}  // namespace
