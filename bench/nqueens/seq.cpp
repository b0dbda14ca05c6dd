// N-queens: the sequential baseline, plain backtracking on the calling
// thread.
#include <cstdint>

#include "nqueens/nqueens.hpp"

namespace {

struct call_each {
  template <class Child>
  std::int64_t operator()(int count, const Child& child) const {
    std::int64_t sum = 0;
    for (int i = 0; i < count; ++i) sum += child(i);
    return sum;
  }
};

auto setup() {
  return
      [](int n) { return bench::nqueens::complete(bench::nqueens::empty_board(n), call_each{}); };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::nqueens::add_timing("recursion", setup); });

}  // namespace
