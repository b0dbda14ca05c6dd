// fib: the sequential baseline, plain recursion on the calling thread.
#include "fib/fib.hpp"

namespace {

// fib.hpp's sequential_fib: weft's ns_per_spawn subtracts the same recursion's time.
auto setup() {
  return [](int n) { return bench::fib::sequential_fib(n); };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::fib::add_timing("recursion", setup); });
const int peak_rss =
    bench::on_startup(bench::suite::peak_rss, [] { bench::fib::add_peak_rss("recursion", setup); });

}  // namespace
