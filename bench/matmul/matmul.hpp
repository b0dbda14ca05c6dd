// Matrix multiplication as a graph, Taskflow's benchmarks/matrix_multiplication
// shape: one task per row initialises that row of a, b and c, a join waits
// for all of them, then one task per row computes that row of c = a * b.
// OpenMP's peer is two `parallel for` loops over the rows. N = 128, 512,
// 1024; every competitor runs the same row functions below.
//
// Name: "matmul/<N>/<variant>" (real time per initialise + multiply).
#pragma once

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/check.hpp"
#include "common/registry.hpp"

namespace bench::matmul {

inline constexpr std::size_t sizes[] = {128, 512, 1024};

struct matrices {
  explicit matrices(std::size_t size) : n(size), a(n * n), b(n * n), c(n * n) {}

  std::size_t n;
  std::vector<double> a;
  std::vector<double> b;
  std::vector<double> c;

  void init_row(std::size_t i) noexcept {
    for (std::size_t j = 0; j < n; ++j) {
      a[i * n + j] = static_cast<double>((i + j) % 7);
      b[i * n + j] = static_cast<double>((i * j) % 5);
      c[i * n + j] = 0.0;
    }
  }

  // i-k-j order: the inner loop runs along rows of b and c and vectorises.
  // A function of its own, aligned to a cache line: inlined, its loop's
  // alignment moved with whatever code came before it in the binary, and
  // an unrelated change elsewhere in the benchmark made it 15% slower.
  [[gnu::noinline, gnu::aligned(64)]] void multiply_row(std::size_t i) noexcept {
    double* ci = &c[i * n];
    for (std::size_t k = 0; k < n; ++k) {
      const double aik = a[i * n + k];
      const double* bk = &b[k * n];
      for (std::size_t j = 0; j < n; ++j) ci[j] += aik * bk[j];
    }
  }

  // Recomputes a few entries directly; all values are small integers, so
  // the sums are exact.
  [[nodiscard]] bool spot_check() const {
    for (std::size_t t = 0; t < 16; ++t) {
      const std::size_t i = (t * 7919) % n;
      const std::size_t j = (t * 104729 + 3) % n;
      double sum = 0.0;
      for (std::size_t k = 0; k < n; ++k) {
        sum += static_cast<double>((i + k) % 7) * static_cast<double>((k * j) % 5);
      }
      if (c[i * n + j] != sum) return false;
    }
    return true;
  }
};

// `setup(m)` returns a callable `void()` that initialises and multiplies m.
template <class Setup>
void add(std::string_view variant, Setup setup) {
  for (const std::size_t n : sizes) {
    bench::add("matmul", std::to_string(n), variant,
               [setup, n](benchmark::State& state) {
                 matrices m(n);
                 auto run = setup(m);
                 for (auto _ : state) {
                   run();
                   if (!check(state, m.spot_check(), "c = a * b, checked at 16 entries")) break;
                 }
               })
        ->Unit(benchmark::kMillisecond)
        ->MinTime(bench::min_time)
        ->MinWarmUpTime(bench::warm_up)
        ->UseRealTime();
  }
}

}  // namespace bench::matmul
