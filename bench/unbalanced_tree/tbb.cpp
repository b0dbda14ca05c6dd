// Unbalanced tree: oneTBB, both halves of every split by parallel_invoke,
// inside a task_arena of 2 threads (the caller and one TBB worker).
#include <oneapi/tbb/parallel_invoke.h>
#include <oneapi/tbb/task_arena.h>

#include <memory>

#include "unbalanced_tree/unbalanced_tree.hpp"

namespace {

struct invoke_fork {
  template <class F, class G>
  std::uint64_t operator()(const F& f, const G& g) const {
    std::uint64_t a = 0;
    std::uint64_t b = 0;
    tbb::parallel_invoke([&] { a = f(); }, [&] { b = g(); });
    return a + b;
  }
};

auto setup() {
  auto arena = std::make_unique<tbb::task_arena>(bench::workers);
  arena->initialize();
  return [arena = std::move(arena)](std::int64_t size) {
    return arena->execute([size] { return bench::unbalanced_tree::tree(0, size, invoke_fork{}); });
  };
}

const int timing = bench::on_startup(
    bench::suite::timing, [] { bench::unbalanced_tree::add_timing("parallel_invoke", setup); });

}  // namespace
