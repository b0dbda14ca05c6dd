// N-queens: oneTBB, a task_group per board with a child run as a task per
// free square of the next row, inside a task_arena of 2 threads (the caller
// and one TBB worker).
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <array>
#include <cstdint>
#include <memory>
#include <numeric>

#include "nqueens/nqueens.hpp"

namespace {

struct group_fan {
  template <class Child>
  std::int64_t operator()(int count, const Child& child) const {
    std::array<std::int64_t, bench::nqueens::max_n> sums{};
    tbb::task_group group;
    for (int i = 0; i < count; ++i) {
      group.run([&sums, &child, i] { sums[static_cast<std::size_t>(i)] = child(i); });
    }
    group.wait();
    return std::accumulate(sums.begin(), sums.begin() + count, std::int64_t{0});
  }
};

auto setup() {
  auto arena = std::make_unique<tbb::task_arena>(bench::workers);
  arena->initialize();
  return [arena = std::move(arena)](int n) {
    return arena->execute(
        [n] { return bench::nqueens::complete(bench::nqueens::empty_board(n), group_fan{}); });
  };
}

const int timing = bench::on_startup(bench::suite::timing,
                                     [] { bench::nqueens::add_timing("task_group", setup); });

}  // namespace
