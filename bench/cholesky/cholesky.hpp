// Tiled Cholesky factorisation (seed 003's "natural" benchmark): A = L Lᵀ for
// a symmetric positive definite N×N matrix stored as nt×nt tiles of b×b
// doubles, the standard right-looking lower-triangular algorithm, one task
// per tile kernel:
//
//   for k in 0..nt-1:
//     potrf  A[k][k] = chol(A[k][k])                              (writes kk)
//     for i > k:       trsm A[i][k] = A[i][k] A[k][k]⁻ᵀ           (reads kk, writes ik)
//     for i > k:       syrk A[i][i] -= A[i][k] A[i][k]ᵀ           (reads ik, writes ii)
//       for k < j < i: gemm A[i][j] -= A[i][k] A[j][k]ᵀ           (reads ik, jk, writes ij)
//
// Sizes: N = 4096 with b = 256 and N = 2048 with b = 128, 16×16 tiles either
// way (816 tasks). The kernels are OpenBLAS's CBLAS and LAPACKE's dpotrf,
// single-threaded (openblas_set_num_threads(1)): the parallelism is the task
// library's. The sequential executable also runs LAPACKE_dpotrf on the whole
// matrix with OpenBLAS's own 2 threads, the reference a task library must
// approach.
//
// Every iteration starts from a fresh copy of A and verifies the result:
// ||A - L Lᵀ||_F / ||A||_F < 1e-10, with L read from the factorised tiles.
// The copy and the check are outside the timed region (manual time): the
// time is the factorisation alone, including whatever the library needs to
// build or submit its tasks.
//
// Name: "cholesky/<N>/<variant>" (manual time per factorisation).
#pragma once

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <lapacke.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/check.hpp"
#include "common/registry.hpp"

namespace bench::cholesky {

struct size {
  int n;  // matrix order
  int b;  // tile order
};
inline constexpr size sizes[] = {{4096, 256}, {2048, 128}};

// Largest accepted ||A - L Lᵀ||_F / ||A||_F.
inline constexpr double max_residual = 1e-10;

// OpenBLAS's own thread count for every BLAS/LAPACK call that follows, from
// any thread (a process-wide setting).
inline void set_blas_threads(int threads) { openblas_set_num_threads(threads); }

// One tile: b×b doubles, column-major, leading dimension b. The task
// libraries that track data by object (weft's flow) see these objects; the
// storage itself lives in the tiled_matrix.
class tile {
 public:
  explicit tile(double* data) noexcept : data_(data) {}
  double* data() noexcept { return data_; }
  const double* data() const noexcept { return data_; }

 private:
  double* data_;
};

// The lower triangle of tiles (i >= j) of an N×N matrix, each tile
// contiguous and 64-byte aligned. Diagonal tiles hold both triangles.
class tiled_matrix {
 public:
  tiled_matrix(int n, int b)
      : n_(n),
        b_(b),
        nt_(n / b),
        tile_elems_(static_cast<std::size_t>(b) * static_cast<std::size_t>(b)),
        count_(static_cast<std::size_t>(nt_) * static_cast<std::size_t>(nt_ + 1) / 2),
        storage_(static_cast<double*>(
            ::operator new (count_* tile_elems_ * sizeof(double), std::align_val_t{64}))) {
    tiles_.reserve(count_);
    for (std::size_t t = 0; t < count_; ++t) tiles_.emplace_back(storage_.get() + t * tile_elems_);
  }

  int n() const noexcept { return n_; }
  int b() const noexcept { return b_; }
  int nt() const noexcept { return nt_; }

  // Tile (i, j), i >= j.
  tile& at(int i, int j) noexcept { return tiles_[index(i, j)]; }
  const tile& at(int i, int j) const noexcept { return tiles_[index(i, j)]; }

  void copy_from(const tiled_matrix& other) noexcept {
    std::memcpy(storage_.get(), other.storage_.get(), count_ * tile_elems_ * sizeof(double));
  }

 private:
  struct aligned_delete {
    void operator()(double* p) const noexcept { ::operator delete (p, std::align_val_t{64}); }
  };

  // Column j of tiles starts after columns of nt, nt-1, ..., nt-j+1 tiles.
  std::size_t index(int i, int j) const noexcept {
    const auto ui = static_cast<std::size_t>(i);
    const auto uj = static_cast<std::size_t>(j);
    return uj * static_cast<std::size_t>(nt_) - uj * (uj - 1) / 2 + (ui - uj);
  }

  int n_;
  int b_;
  int nt_;
  std::size_t tile_elems_;
  std::size_t count_;
  std::unique_ptr<double, aligned_delete> storage_;
  std::vector<tile> tiles_;
};

// Element (r, c) of the test matrix, r >= c; the matrix is symmetric. Off the
// diagonal: a hash of (r, c) mapped to [-0.5, 0.5); on it: n + [0, 1). Every
// row's off-diagonal sum stays below n/2, so A is strictly diagonally
// dominant with a positive diagonal, hence symmetric positive definite (and
// well conditioned). Deterministic and independent of the storage layout.
inline double element(int n, int r, int c) noexcept {
  std::uint64_t x =
      (static_cast<std::uint64_t>(r) << 32) ^ static_cast<std::uint64_t>(c) ^ 0x9e3779b97f4a7c15ULL;
  // splitmix64's finaliser.
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  const double unit = static_cast<double>(x >> 11) * 0x1.0p-53;  // [0, 1)
  return r == c ? static_cast<double>(n) + unit : unit - 0.5;
}

inline tiled_matrix make_spd(int n, int b) {
  tiled_matrix m(n, b);
  for (int tj = 0; tj < m.nt(); ++tj) {
    for (int ti = tj; ti < m.nt(); ++ti) {
      double* t = m.at(ti, tj).data();
      for (int c = 0; c < b; ++c) {
        for (int r = 0; r < b; ++r) {
          const int gr = ti * b + r;
          const int gc = tj * b + c;
          t[c * b + r] = gr >= gc ? element(n, gr, gc) : element(n, gc, gr);
        }
      }
    }
  }
  return m;
}

// Column-major full matrix <-> tiles (lower tiles only; the full matrix's
// upper triangle is filled from the diagonal tiles, as the tiles hold it).
inline void to_full(const tiled_matrix& m, std::vector<double>& full) {
  const auto n = static_cast<std::size_t>(m.n());
  const auto b = static_cast<std::size_t>(m.b());
  full.assign(n * n, 0.0);
  for (int tj = 0; tj < m.nt(); ++tj) {
    for (int ti = tj; ti < m.nt(); ++ti) {
      const double* t = m.at(ti, tj).data();
      for (std::size_t c = 0; c < b; ++c) {
        std::memcpy(
            &full[(static_cast<std::size_t>(tj) * b + c) * n + static_cast<std::size_t>(ti) * b],
            t + c * b, b * sizeof(double));
      }
    }
  }
}

inline void from_full(const std::vector<double>& full, tiled_matrix& m) {
  const auto n = static_cast<std::size_t>(m.n());
  const auto b = static_cast<std::size_t>(m.b());
  for (int tj = 0; tj < m.nt(); ++tj) {
    for (int ti = tj; ti < m.nt(); ++ti) {
      double* t = m.at(ti, tj).data();
      for (std::size_t c = 0; c < b; ++c) {
        std::memcpy(
            t + c * b,
            &full[(static_cast<std::size_t>(tj) * b + c) * n + static_cast<std::size_t>(ti) * b],
            b * sizeof(double));
      }
    }
  }
}

// Failed potrf calls (a non-positive pivot) since the last verify(). Tasks
// of every library add to it; the check reads it after the wait.
inline std::atomic<int> potrf_failures{0};

// The four tile kernels, for tiles of order b.
inline void potrf(double* akk, int b) noexcept {
  if (LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', b, akk, b) != 0) {
    potrf_failures.fetch_add(1, std::memory_order_relaxed);
  }
}

// A[i][k] = A[i][k] L[k][k]⁻ᵀ
inline void trsm(const double* akk, double* aik, int b) noexcept {
  cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, b, b, 1.0, akk, b,
              aik, b);
}

// A[i][i] -= A[i][k] A[i][k]ᵀ (lower triangle)
inline void syrk(const double* aik, double* aii, int b) noexcept {
  cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, b, b, -1.0, aik, b, 1.0, aii, b);
}

// A[i][j] -= A[i][k] A[j][k]ᵀ
inline void gemm(const double* aik, const double* ajk, double* aij, int b) noexcept {
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, b, b, b, -1.0, aik, b, ajk, b, 1.0, aij, b);
}

// One task of the algorithm: which kernel on which tiles.
enum class kernel { potrf, trsm, syrk, gemm };
struct task {
  kernel kind;
  int k;  // step
  int i;  // row of the tile written (trsm, syrk, gemm)
  int j;  // column of the tile written (gemm)
};

// Calls f(task) for every task in program order (the sequential order,
// whose data dependencies every parallel run must respect).
template <class F>
void for_each_task(int nt, F&& f) {
  for (int k = 0; k < nt; ++k) {
    f(task{kernel::potrf, k, k, k});
    for (int i = k + 1; i < nt; ++i) f(task{kernel::trsm, k, i, k});
    for (int i = k + 1; i < nt; ++i) {
      f(task{kernel::syrk, k, i, i});
      for (int j = k + 1; j < i; ++j) f(task{kernel::gemm, k, i, j});
    }
  }
}

// Where a tile is: row i, column j of tiles, i >= j.
struct tile_position {
  int i;
  int j;
};

// The tile that task t writes, and the ones it reads (at most two), by
// position.
struct footprint {
  tile_position write;
  tile_position read[2];
  int reads;
};

inline footprint footprint_of(const task& t) noexcept {
  switch (t.kind) {
    case kernel::potrf:
      return {{t.k, t.k}, {}, 0};
    case kernel::trsm:
      return {{t.i, t.k}, {{t.k, t.k}, {}}, 1};
    case kernel::syrk:
      return {{t.i, t.i}, {{t.i, t.k}, {}}, 1};
    case kernel::gemm:
      return {{t.i, t.j}, {{t.i, t.k}, {t.j, t.k}}, 2};
  }
  return {{t.k, t.k}, {}, 0};
}

// The same as tiles of m.
struct accesses {
  tile* write;
  tile* read[2];
  int reads;
};

inline accesses accesses_of(tiled_matrix& m, const task& t) {
  const footprint f = footprint_of(t);
  accesses a{&m.at(f.write.i, f.write.j), {nullptr, nullptr}, f.reads};
  for (int r = 0; r < f.reads; ++r) a.read[r] = &m.at(f.read[r].i, f.read[r].j);
  return a;
}

// Runs task t on m, on the calling thread.
inline void run(tiled_matrix& m, const task& t) noexcept {
  const int b = m.b();
  switch (t.kind) {
    case kernel::potrf:
      potrf(m.at(t.k, t.k).data(), b);
      return;
    case kernel::trsm:
      trsm(m.at(t.k, t.k).data(), m.at(t.i, t.k).data(), b);
      return;
    case kernel::syrk:
      syrk(m.at(t.i, t.k).data(), m.at(t.i, t.i).data(), b);
      return;
    case kernel::gemm:
      gemm(m.at(t.i, t.k).data(), m.at(t.j, t.k).data(), m.at(t.i, t.j).data(), b);
      return;
  }
}

inline int task_count(int nt) {
  int count = 0;
  for_each_task(nt, [&count](const task&) { ++count; });
  return count;
}

// ||A - L Lᵀ||_F / ||A||_F, with L the lower triangle of `l`'s tiles. Tile by
// tile: R[i][j] = A[i][j] - sum over k <= j of L[i][k] L[j][k]ᵀ, with the
// diagonal tile L[j][j] made lower triangular first; off-diagonal tiles
// count twice (R is symmetric). About N³/3 flops, run with whatever BLAS
// thread count the caller set.
inline double residual(const tiled_matrix& a, const tiled_matrix& l) {
  const int b = a.b();
  const int nt = a.nt();
  const auto elems = static_cast<std::size_t>(b) * static_cast<std::size_t>(b);
  std::vector<double> r(elems);
  std::vector<double> ljj(elems);
  double r2 = 0.0;
  double a2 = 0.0;
  for (int j = 0; j < nt; ++j) {
    const double* diag = l.at(j, j).data();
    for (int c = 0; c < b; ++c) {
      for (int row = 0; row < b; ++row) {
        ljj[static_cast<std::size_t>(c * b + row)] = row >= c ? diag[c * b + row] : 0.0;
      }
    }
    for (int i = j; i < nt; ++i) {
      const double* aij = a.at(i, j).data();
      std::memcpy(r.data(), aij, elems * sizeof(double));
      for (int k = 0; k < j; ++k) {
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, b, b, b, -1.0, l.at(i, k).data(), b,
                    l.at(j, k).data(), b, 1.0, r.data(), b);
      }
      const double* lij = i == j ? ljj.data() : l.at(i, j).data();
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, b, b, b, -1.0, lij, b, ljj.data(), b,
                  1.0, r.data(), b);
      const double weight = i == j ? 1.0 : 2.0;
      double rs = 0.0;
      double as = 0.0;
      for (std::size_t e = 0; e < elems; ++e) {
        rs += r[e] * r[e];
        as += aij[e] * aij[e];
      }
      r2 += weight * rs;
      a2 += weight * as;
    }
  }
  return std::sqrt(r2) / std::sqrt(a2);
}

// Checks a factorisation: no potrf failed and the residual is small.
// Resets the failure count for the next run.
inline bool verify(benchmark::State& state, const tiled_matrix& a, const tiled_matrix& l) {
  const int failures = potrf_failures.exchange(0, std::memory_order_relaxed);
  if (!check_equal(state, failures, 0, "potrf calls that found a non-positive pivot")) return false;
  const double res = residual(a, l);
  state.counters["residual"] = res;
  return check(state, res < max_residual,
               "||A - L L^T||_F / ||A||_F = " + std::to_string(res) + ", above 1e-10");
}

inline double gflops(int n) { return static_cast<double>(n) * n * n / 3.0 / 1e9; }

// `setup(b)` prepares one benchmark run (a pool, a runtime, the BLAS thread
// count) and returns a callable that factorises a tiled_matrix with tiles of
// order b in place. The callable returns void, or an int that is 0 when the
// library reported no error.
template <class Setup>
void add(std::string_view variant, Setup setup) {
  for (const size sz : sizes) {
    bench::add("cholesky", std::to_string(sz.n), variant,
               [setup, sz](benchmark::State& state) {
                 const tiled_matrix a = make_spd(sz.n, sz.b);
                 tiled_matrix work(sz.n, sz.b);
                 auto factorise = setup(sz.b);
                 potrf_failures.store(0, std::memory_order_relaxed);
                 double seconds = 0.0;
                 for (auto _ : state) {
                   work.copy_from(a);
                   int error = 0;
                   const auto start = std::chrono::steady_clock::now();
                   if constexpr (std::is_void_v<decltype(factorise(work))>) {
                     factorise(work);
                   } else {
                     error = factorise(work);
                   }
                   const auto stop = std::chrono::steady_clock::now();
                   const double s = std::chrono::duration<double>(stop - start).count();
                   state.SetIterationTime(s);
                   seconds += s;
                   if (!check_equal(state, error, 0, "the library's error code")) return;
                   if (!verify(state, a, work)) return;
                 }
                 state.counters["gflops"] =
                     gflops(sz.n) * static_cast<double>(state.iterations()) / seconds;
                 state.counters["tile"] = sz.b;
               })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(bench::min_time)
        ->MinWarmUpTime(bench::warm_up)
        ->UseManualTime();
  }
}

}  // namespace bench::cholesky
