// Unbalanced tree: the sequential baseline, plain recursion on the calling
// thread.
#include "unbalanced_tree/unbalanced_tree.hpp"

namespace {

struct call_both {
  template <class F, class G>
  std::uint64_t operator()(const F& f, const G& g) const {
    return f() + g();
  }
};

auto setup() {
  return [](std::int64_t size) { return bench::unbalanced_tree::tree(0, size, call_both{}); };
}

const int timing = bench::on_startup(
    bench::suite::timing, [] { bench::unbalanced_tree::add_timing("recursion", setup); });

}  // namespace
