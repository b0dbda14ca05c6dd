// Parallel loops: OpenMP `parallel for` with 2 threads (the calling thread is
// one of them): schedule(static) everywhere, which is what the issue's
// targets compare with, and schedule(dynamic) for the two loops whose
// elements differ in cost or are few and slow. The sum uses reduction(+).
#include "parallel_loops/parallel_loops.hpp"

namespace {

namespace loops = bench::parallel_loops;

const int timing = bench::on_startup(bench::suite::timing, [] {
  loops::add_sum("static", [] {
    return [](const std::vector<double>& v) {
      double s = 0;
      const double* d = v.data();
      const auto n = static_cast<std::int64_t>(v.size());
#pragma omp parallel for num_threads(bench::workers) schedule(static) reduction(+ : s)
      for (std::int64_t i = 0; i < n; ++i) s += d[i];
      return s;
    };
  });
  loops::add_balanced("static", [] {
    return [](std::vector<double>& x) {
      double* d = x.data();
      const auto n = static_cast<std::int64_t>(x.size());
#pragma omp parallel for num_threads(bench::workers) schedule(static)
      for (std::int64_t i = 0; i < n; ++i) loops::bump(d[i]);
    };
  });
  loops::add_unbalanced("static", [] {
    return [](std::vector<std::uint64_t>& out) {
      std::uint64_t* o = out.data();
#pragma omp parallel for num_threads(bench::workers) schedule(static)
      for (std::int64_t i = 0; i < loops::unbalanced_n; ++i) o[i] = loops::unbalanced_work(i);
    };
  });
  loops::add_unbalanced("dynamic", [] {
    return [](std::vector<std::uint64_t>& out) {
      std::uint64_t* o = out.data();
#pragma omp parallel for num_threads(bench::workers) schedule(dynamic)
      for (std::int64_t i = 0; i < loops::unbalanced_n; ++i) o[i] = loops::unbalanced_work(i);
    };
  });
  loops::add_slow("static", [] {
    return [](std::vector<unsigned char>& marks) {
#pragma omp parallel for num_threads(bench::workers) schedule(static)
      for (std::int64_t i = 0; i < loops::slow_n; ++i) loops::slow_element(marks, i);
    };
  });
  loops::add_slow("dynamic", [] {
    return [](std::vector<unsigned char>& marks) {
#pragma omp parallel for num_threads(bench::workers) schedule(dynamic)
      for (std::int64_t i = 0; i < loops::slow_n; ++i) loops::slow_element(marks, i);
    };
  });
});

}  // namespace
