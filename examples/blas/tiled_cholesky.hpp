// The tiled Cholesky shared by examples/blas/cholesky.cpp (one process) and
// examples/cholesky_mpi.cpp (across MPI ranks): the matrix in tiles, a
// random symmetric positive definite input, the textbook loops as a data
// flow, and the residual check. emplace_cholesky works with any flow that
// has emplace(f, weft::read/write...): weft::flow and weft::mpi::flow.
#pragma once

#include <cblas.h>
#include <lapacke.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <stdexcept>
#include <vector>
#include <weft/flow.hpp>

namespace example {

inline std::size_t index(int i) { return static_cast<std::size_t>(i); }

// A b x b tile, column-major. Tasks are ordered by the tile objects they
// declare, so each tile is one object.
struct tile {
  std::vector<double> data;
};

class tiled_matrix {
 public:
  tiled_matrix(int tiles, int b) : tiles_(tiles), b_(b), storage_(index(tiles) * index(tiles)) {
    for (tile& t : storage_) t.data.assign(index(b) * index(b), 0.0);
  }
  tile& at(int i, int j) { return storage_[index(i) * index(tiles_) + index(j)]; }
  double& element(int r, int c) {
    return at(r / b_, c / b_).data[index(c % b_) * index(b_) + index(r % b_)];
  }
  [[nodiscard]] int tiles() const { return tiles_; }
  [[nodiscard]] int block() const { return b_; }
  [[nodiscard]] int size() const { return tiles_ * b_; }

  // Copies the n x n column-major matrix a into the tiles.
  void assign(const std::vector<double>& a) {
    const int n = size();
    for (int c = 0; c < n; ++c) {
      for (int r = 0; r < n; ++r) element(r, c) = a[index(c) * index(n) + index(r)];
    }
  }

 private:
  int tiles_;
  int b_;
  std::vector<tile> storage_;
};

// A = R R^T + n I: symmetric positive definite (the same on every call).
inline std::vector<double> random_spd(int n) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> r(index(n) * index(n));
  for (double& x : r) x = u(rng);
  std::vector<double> a(index(n) * index(n));
  cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, n, n, 1.0, r.data(), n, 0.0, a.data(), n);
  for (int c = 0; c < n; ++c) {
    a[index(c) * index(n) + index(c)] += n;
    for (int r2 = 0; r2 < c; ++r2) {
      a[index(c) * index(n) + index(r2)] = a[index(r2) * index(n) + index(c)];
    }
  }
  return a;
}

// The right-looking algorithm, one task per tile kernel, in program order.
// after_step(k) is called once step k's tasks are emplaced: nothing after
// them reads the panel L(k..nt-1, k) (examples/cholesky_mpi.cpp drops the
// ranks' copies of it there).
template <class Flow, class AfterStep>
void emplace_cholesky(Flow& flow, tiled_matrix& m, AfterStep after_step) {
  const int nt = m.tiles();
  const int b = m.block();
  for (int k = 0; k < nt; ++k) {
    flow.emplace(
        [b](tile& akk) {
          if (LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', b, akk.data.data(), b) != 0) {
            throw std::runtime_error("cholesky: the matrix is not positive definite");
          }
        },
        weft::write(m.at(k, k)));
    for (int i = k + 1; i < nt; ++i) {
      flow.emplace(
          [b](const tile& akk, tile& aik) {
            cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, b, b, 1.0,
                        akk.data.data(), b, aik.data.data(), b);
          },
          weft::read(m.at(k, k)), weft::write(m.at(i, k)));
    }
    for (int i = k + 1; i < nt; ++i) {
      flow.emplace(
          [b](const tile& aik, tile& aii) {
            cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, b, b, -1.0, aik.data.data(), b,
                        1.0, aii.data.data(), b);
          },
          weft::read(m.at(i, k)), weft::write(m.at(i, i)));
      for (int j = k + 1; j < i; ++j) {
        flow.emplace(
            [b](const tile& aik, const tile& ajk, tile& aij) {
              cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, b, b, b, -1.0, aik.data.data(),
                          b, ajk.data.data(), b, 1.0, aij.data.data(), b);
            },
            weft::read(m.at(i, k)), weft::read(m.at(j, k)), weft::write(m.at(i, j)));
      }
    }
    after_step(k);
  }
}

template <class Flow>
void emplace_cholesky(Flow& flow, tiled_matrix& m) {
  emplace_cholesky(flow, m, [](int) {});
}

// ||A - L L^T||_F / ||A||_F with L the lower triangle of the factorised m.
inline double residual(const std::vector<double>& a, tiled_matrix& m) {
  const int n = m.size();
  std::vector<double> l(index(n) * index(n), 0.0);
  for (int c = 0; c < n; ++c) {
    for (int r = c; r < n; ++r) l[index(c) * index(n) + index(r)] = m.element(r, c);
  }
  std::vector<double> llt(index(n) * index(n));
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0, l.data(), n, l.data(), n, 0.0,
              llt.data(), n);
  double diff = 0.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - llt[i]) * (a[i] - llt[i]);
    norm += a[i] * a[i];
  }
  return std::sqrt(diff / norm);
}

}  // namespace example
