// Parallel loops and reductions on a pool (weft/algorithm.hpp): a parallel
// sum, a string concatenation that keeps its order, map's results in input
// order, the first exception of a loop reaching the caller, and the caller
// running a loop's elements itself. Exits non-zero if any result differs
// from the sequential one.
#include <atomic>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>
#include <weft/algorithm.hpp>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 2}};
  bool ok = true;

  // Sum of squares of 0 .. n-1, computed in parallel.
  const std::size_t n = 1'000'000;
  std::vector<double> x(n);
  weft::for_each_index(pool, std::size_t{0}, n,
                       [&](std::size_t i) { x[i] = static_cast<double>(i); });
  const double sum = weft::transform_reduce(pool, x.begin(), x.end(), 0.0, std::plus<>{},
                                            [](double v) { return v * v; });
  const double exact =
      (static_cast<double>(n) - 1) * static_cast<double>(n) * (2 * static_cast<double>(n) - 1) / 6;
  std::printf("sum of squares below %zu: %.6e (exact %.6e)\n", n, sum, exact);
  ok = ok && std::abs(sum - exact) <= 1e-9 * exact;  // rounding differs by split

  // Concatenation is associative but not commutative: reduce combines in
  // index order, so the result is the sequential one on every run.
  std::vector<std::string> words{"work", "-", "stealing", " ", "in", " ", "order"};
  const std::string joined = weft::reduce(pool, words.begin(), words.end(), std::string("weft: "),
                                          std::plus<>{}, weft::grain{1});
  std::printf("%s\n", joined.c_str());
  ok = ok && joined == "weft: work-stealing in order";

  // map: results in input order.
  const std::vector<int> lengths =
      weft::map(pool, words, [](const std::string& w) { return static_cast<int>(w.size()); });
  std::printf("lengths:");
  for (const int l : lengths) std::printf(" %d", l);
  std::printf("\n");
  ok = ok && lengths == std::vector<int>{4, 1, 8, 1, 2, 1, 5};

  // The lowest index that threw wins; pieces not started are skipped.
  try {
    weft::for_each_index(pool, 0, 100'000, [](int i) {
      if (i == 777 || i == 90'000) throw std::runtime_error("bad element " + std::to_string(i));
    });
    std::puts("the exception was lost");
    ok = false;
  } catch (const std::runtime_error& e) {
    std::printf("caught: %s\n", e.what());
    // 777 threw unless its piece was skipped because 90000 threw first.
    const std::string what = e.what();
    ok = ok && (what == "bad element 777" || what == "bad element 90000");
  }

  // Called from this thread, which is no worker, a loop runs on the caller
  // too, in a worker's place (its elements see the helper slot's index,
  // max_size()), while one worker fewer is woken: on 2 workers, the caller
  // and one worker share it.
  std::vector<std::atomic<int>> by_index(pool.slots());
  weft::for_each_index(pool, 0, 10'000, [&](int) {
    by_index[weft::this_worker::index().value_or(0)].fetch_add(1, std::memory_order_relaxed);
  });
  int total = 0;
  for (const auto& c : by_index) total += c.load();
  const int on_caller = by_index[pool.max_size()].load();
  std::printf("elements run by the caller: %d of %d\n", on_caller, total);
  ok = ok && total == 10'000 && on_caller > 0;

  std::puts(ok ? "all results match" : "MISMATCH");
  return ok ? 0 : 1;
}
