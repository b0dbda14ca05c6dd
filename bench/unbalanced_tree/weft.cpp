// Unbalanced tree: weft on a pool of 2 workers; the root is submitted as a
// job, so that only the workers compute (the caller blocks in get()).
//   join        weft::join per split
//   task_group  a task_group per split, both halves spawned, wait()
#include <memory>
#include <weft/weft.hpp>

#include "unbalanced_tree/unbalanced_tree.hpp"

namespace {

using bench::unbalanced_tree::tree;

struct join_fork {
  template <class F, class G>
  std::uint64_t operator()(const F& f, const G& g) const {
    auto [a, b] = weft::join(f, g);
    return a + b;
  }
};

struct group_fork {
  weft::pool* pool;

  template <class F, class G>
  std::uint64_t operator()(const F& f, const G& g) const {
    std::uint64_t a = 0;
    std::uint64_t b = 0;
    weft::task_group group{*pool};
    group.spawn([&] { a = f(); });
    group.spawn([&] { b = g(); });
    group.wait();
    return a + b;
  }
};

std::unique_ptr<weft::pool> make_pool() {
  return std::make_unique<weft::pool>(weft::pool_options{.threads = bench::workers});
}

auto setup_join() {
  return [pool = make_pool()](std::int64_t size) {
    return pool->submit([size] { return tree(0, size, join_fork{}); }).get();
  };
}

auto setup_group() {
  return [pool = make_pool()](std::int64_t size) {
    return pool->submit([p = pool.get(), size] { return tree(0, size, group_fork{p}); }).get();
  };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::unbalanced_tree::add_timing("join", setup_join);
  bench::unbalanced_tree::add_timing("task_group", setup_group);
});

}  // namespace
