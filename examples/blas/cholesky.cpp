// Tiled Cholesky factorisation A = L L^T written as a data flow: the loops
// are the textbook sequential algorithm, each tile kernel is a task that
// declares the tiles it reads and writes, and weft runs them in parallel
// wherever the declarations allow. Checked by the residual
// ||A - L L^T||_F / ||A||_F on a random symmetric positive definite matrix.
//
// Needs OpenBLAS (CBLAS) and LAPACKE: Debian's libopenblas-dev and
// liblapacke-dev, installed by scripts/deps.sh.
#include <cblas.h>
#include <lapacke.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>
#include <weft/weft.hpp>

namespace {

std::size_t index(int i) { return static_cast<std::size_t>(i); }

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

 private:
  int tiles_;
  int b_;
  std::vector<tile> storage_;
};

// A = R R^T + n I: symmetric positive definite.
std::vector<double> random_spd(int n) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> r(static_cast<std::size_t>(n) * n);
  for (double& x : r) x = u(rng);
  std::vector<double> a(static_cast<std::size_t>(n) * n);
  cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, n, n, 1.0, r.data(), n, 0.0, a.data(), n);
  for (int c = 0; c < n; ++c) {
    a[static_cast<std::size_t>(c) * n + c] += n;
    for (int r2 = 0; r2 < c; ++r2) {
      a[static_cast<std::size_t>(c) * n + r2] = a[static_cast<std::size_t>(r2) * n + c];
    }
  }
  return a;
}

void factorise(weft::pool& pool, tiled_matrix& m) {
  const int nt = m.tiles();
  const int b = m.block();
  weft::flow flow{pool};
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
  }
  flow.wait();  // rethrows the first exception a task threw
}

}  // namespace

int main() {
  openblas_set_num_threads(1);  // the parallelism comes from the tasks
  const int tiles = 8;
  const int b = 64;
  const int n = tiles * b;
  const std::vector<double> a = random_spd(n);
  tiled_matrix m(tiles, b);
  for (int c = 0; c < n; ++c) {
    for (int r = 0; r < n; ++r) m.element(r, c) = a[static_cast<std::size_t>(c) * n + r];
  }

  weft::pool pool{{.threads = 2}};
  factorise(pool, m);

  // L from the lower triangle, then ||A - L L^T||_F / ||A||_F.
  std::vector<double> l(static_cast<std::size_t>(n) * n, 0.0);
  for (int c = 0; c < n; ++c) {
    for (int r = c; r < n; ++r) l[static_cast<std::size_t>(c) * n + r] = m.element(r, c);
  }
  std::vector<double> llt(static_cast<std::size_t>(n) * n);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0, l.data(), n, l.data(), n, 0.0,
              llt.data(), n);
  double diff = 0.0;
  double norm = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - llt[i]) * (a[i] - llt[i]);
    norm += a[i] * a[i];
  }
  const double residual = std::sqrt(diff / norm);
  std::printf("cholesky %dx%d in %dx%d tiles: residual %.3e\n", n, n, tiles, tiles, residual);
  return residual < 1e-10 ? 0 : 1;
}
