// Skynet: weft on a pool of 2 workers; the root is submitted as a job, so
// that only the workers compute (the caller blocks in get()).
//   task_group  a task_group per node, its ten children spawned, wait()
//   join        nested weft::join per node: the children [lo, hi) split
//               into [lo, mid) and [mid, hi) until one is left, so a node
//               makes nine joins (pairs of halves) for its ten children
//   join_each   weft::join_each(10, ...) per node: the same halving, in
//               the library (the n-way join users are pointed to)
#include <array>
#include <cstdint>
#include <memory>
#include <numeric>
#include <weft/weft.hpp>

#include "skynet/skynet.hpp"

namespace {

using bench::skynet::node;

struct group_fan {
  weft::pool* pool;

  template <class Child>
  std::int64_t operator()(int count, const Child& child) const {
    std::array<std::int64_t, bench::skynet::children> sums{};
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
    std::array<std::int64_t, bench::skynet::children> sums{};
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
  return [pool = make_pool()](int levels) {
    return pool->submit([p = pool.get(), levels] { return node(0, levels, group_fan{p}); }).get();
  };
}

auto setup_join() {
  return [pool = make_pool()](int levels) {
    return pool->submit([levels] { return node(0, levels, join_fan{}); }).get();
  };
}

auto setup_join_each() {
  return [pool = make_pool()](int levels) {
    return pool->submit([levels] { return node(0, levels, join_each_fan{}); }).get();
  };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::skynet::add_timing("task_group", setup_group);
  bench::skynet::add_timing("join", setup_join);
  bench::skynet::add_timing("join_each", setup_join_each);
});

}  // namespace
