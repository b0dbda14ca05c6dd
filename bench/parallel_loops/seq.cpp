// Parallel loops: the sequential baseline, plain loops on the calling thread.
#include "parallel_loops/parallel_loops.hpp"

namespace {

namespace loops = bench::parallel_loops;

const int timing = bench::on_startup(bench::suite::timing, [] {
  loops::add_sum("loop", [] {
    return [](const std::vector<double>& v) {
      double s = 0;
      for (const double x : v) s += x;
      return s;
    };
  });
  loops::add_balanced("loop", [] {
    return [](std::vector<double>& x) {
      for (double& e : x) loops::bump(e);
      // Keep the compiler from folding the benchmark's iterations together.
      benchmark::ClobberMemory();
    };
  });
  loops::add_unbalanced("loop", [] {
    return [](std::vector<std::uint64_t>& out) {
      for (std::int64_t i = 0; i < loops::unbalanced_n; ++i)
        out[static_cast<std::size_t>(i)] = loops::unbalanced_work(i);
    };
  });
  loops::add_slow("loop", [] {
    return [](std::vector<unsigned char>& marks) {
      for (std::int64_t i = 0; i < loops::slow_n; ++i) loops::slow_element(marks, i);
    };
  });
});

}  // namespace
