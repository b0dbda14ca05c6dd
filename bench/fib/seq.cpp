// fib: the sequential baseline, plain recursion on the calling thread.
#include "fib/fib.hpp"

namespace {

int fib(int n) {
  if (n < 2) return n;
  return fib(n - 1) + fib(n - 2);
}

auto setup() {
  return [](int n) {
    // Hide n from the optimiser so that it cannot fold the recursion.
    benchmark::DoNotOptimize(n);
    return fib(n);
  };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::fib::add_timing("recursion", setup); });
const int peak_rss =
    bench::on_startup(bench::suite::peak_rss, [] { bench::fib::add_peak_rss("recursion", setup); });

}  // namespace
