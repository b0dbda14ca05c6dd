// Tiled Cholesky, sequential baselines on the calling thread:
//   cholesky/<N>/tiled    the same tile kernels in program order, BLAS on
//                         one thread: the work every task library divides
//   cholesky/<N>/lapacke  LAPACKE_dpotrf on the whole column-major matrix,
//                         OpenBLAS on 2 threads: the library's own blocked,
//                         parallel factorisation (the matrix is converted to
//                         and from tiles outside the timed region)
#include <thread>
#include <vector>

#include "cholesky/cholesky.hpp"

namespace {

using bench::cholesky::tiled_matrix;

auto setup_tiled(int /*b*/) {
  bench::cholesky::set_blas_threads(1);
  return [](tiled_matrix& m) {
    bench::cholesky::for_each_task(
        m.nt(), [&m](const bench::cholesky::task& t) { bench::cholesky::run(m, t); });
  };
}

// cholesky::add's driver hands its callable a tiled matrix; LAPACKE needs
// the full one, so this variant has a driver of its own: the same matrix,
// the same manual timing (the dpotrf call alone) and the same check, on the
// factor copied back into tiles.
void run_lapacke(benchmark::State& state, int n, int b) {
  using namespace bench::cholesky;
  set_blas_threads(bench::workers);
  const tiled_matrix a = make_spd(n, b);
  tiled_matrix result(n, b);
  std::vector<double> original;
  to_full(a, original);
  std::vector<double> work;
  potrf_failures.store(0, std::memory_order_relaxed);
  double seconds = 0.0;
  for (auto _ : state) {
    work = original;
    const auto start = std::chrono::steady_clock::now();
    const lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, work.data(), n);
    const auto stop = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(stop - start).count();
    state.SetIterationTime(s);
    seconds += s;
    if (!bench::check_equal(state, info, 0, "LAPACKE_dpotrf's info")) return;
    from_full(work, result);
    if (!verify(state, a, result)) return;
  }
  state.counters["gflops"] = gflops(n) * static_cast<double>(state.iterations()) / seconds;
  state.counters["tile"] = 0;
  // OpenBLAS's threads spin for about 0.1 s after a parallel call before
  // they sleep; let them settle so that they do not take a core from the
  // next benchmark in this process.
  set_blas_threads(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::cholesky::add("tiled", setup_tiled);
  for (const bench::cholesky::size sz : bench::cholesky::sizes) {
    bench::add("cholesky", std::to_string(sz.n), "lapacke",
               [sz](benchmark::State& state) { run_lapacke(state, sz.n, sz.b); })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(bench::min_time)
        ->MinWarmUpTime(bench::warm_up)
        ->UseManualTime();
  }
});

}  // namespace
