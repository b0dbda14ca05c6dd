// N-queens: weft on a pool of 2 workers; the empty board is submitted as a
// job, so that only the workers compute (the caller blocks in get()).
//   task_group  a task_group per board, a child spawned per free square
//               of the next row, wait()
//   join        nested weft::join per board over its free squares: the
//               candidates [lo, hi) split into [lo, mid) and [mid, hi)
//               until one is left (count - 1 joins for count candidates)
//   join_each   weft::join_each(count, ...) per board: the same halving,
//               in the library (the n-way join users are pointed to)
#include <array>
#include <cstdint>
#include <memory>
#include <numeric>
#include <weft/weft.hpp>

#include "nqueens/nqueens.hpp"

namespace {

using bench::nqueens::complete;
using bench::nqueens::empty_board;

struct group_fan {
  weft::pool* pool;

  template <class Child>
  std::int64_t operator()(int count, const Child& child) const {
    std::array<std::int64_t, bench::nqueens::max_n> sums{};
    weft::task_group group{*pool};
    for (int i = 0; i < count; ++i) {
      group.spawn([&sums, &child, i] { sums[static_cast<std::size_t>(i)] = child(i); });
    }
    group.wait();
    return std::accumulate(sums.begin(), sums.begin() + count, std::int64_t{0});
  }
};

// child(lo) + ... + child(hi - 1), halves forked with join.
template <class Child>
std::int64_t split(const Child& child, int lo, int hi) {
  if (hi - lo == 1) return child(lo);
  const int mid = lo + (hi - lo) / 2;
  auto [a, b] = weft::join([&child, lo, mid] { return split(child, lo, mid); },
                           [&child, mid, hi] { return split(child, mid, hi); });
  return a + b;
}

// The n-way join: weft::join_each over the children, each writing its sum.
struct join_each_fan {
  template <class Child>
  std::int64_t operator()(int count, const Child& child) const {
    std::array<std::int64_t, bench::nqueens::max_n> sums{};
    weft::join_each(static_cast<std::size_t>(count),
                    [&sums, &child](std::size_t i) { sums[i] = child(static_cast<int>(i)); });
    return std::accumulate(sums.begin(), sums.begin() + count, std::int64_t{0});
  }
};

struct join_fan {
  template <class Child>
  std::int64_t operator()(int count, const Child& child) const {
    return split(child, 0, count);
  }
};

std::unique_ptr<weft::pool> make_pool() {
  return std::make_unique<weft::pool>(weft::pool_options{.threads = bench::workers});
}

auto setup_group() {
  return [pool = make_pool()](int n) {
    return pool->submit([p = pool.get(), n] { return complete(empty_board(n), group_fan{p}); })
        .get();
  };
}

auto setup_join() {
  return [pool = make_pool()](int n) {
    return pool->submit([n] { return complete(empty_board(n), join_fan{}); }).get();
  };
}

auto setup_join_each() {
  return [pool = make_pool()](int n) {
    return pool->submit([n] { return complete(empty_board(n), join_each_fan{}); }).get();
  };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::nqueens::add_timing("task_group", setup_group);
  bench::nqueens::add_timing("join", setup_join);
  bench::nqueens::add_timing("join_each", setup_join_each);
});

}  // namespace
