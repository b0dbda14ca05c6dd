// The instruction count of a task_group's spawn, take and finish, for
// callgrind (docs/design.md, "What a task_group costs"). Not a timing
// benchmark:
//   valgrind --tool=callgrind build/release/bench/weft_group_callgrind fib 22 1
// (and 20): the difference of the two totals over the difference of the
// forks it prints is the cost of one fork (one call of fib, one node of
// skynet). Shapes:
//   fib        a task_group per call, both children spawned, wait()
//   fib_rw     a task_group per call, one child spawned, run_and_wait()
//   fib_join   weft::join per call (the reference)
//   skynet     a task_group per node, ten children spawned, wait(); n is
//              the levels below the root
//   skynet_join  the same tree with nested weft::join (nine per node)
//   empty      n * 100 groups, one after another, each spawning ten jobs
//              that each store one int, then wait(): the group's own cost
//              per job (spawn, take, finish) with next to no work around it
// Arguments: shape, n, the pool's thread count. Runs the shape once at
// n - 2 first (warms the caches up, as the timing benchmarks do), then at
// n; prints the forks made by both; exits 1 on a wrong result.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string_view>
#include <utility>
#include <weft/weft.hpp>

namespace {

int fib_group(weft::pool& pool, int n) {
  if (n < 2) return n;
  int a = 0;
  int b = 0;
  weft::task_group g{pool};
  g.spawn([&] { a = fib_group(pool, n - 1); });
  g.spawn([&] { b = fib_group(pool, n - 2); });
  g.wait();
  return a + b;
}

int fib_rw(weft::pool& pool, int n) {
  if (n < 2) return n;
  int a = 0;
  int b = 0;
  weft::task_group g{pool};
  g.spawn([&] { a = fib_rw(pool, n - 1); });
  g.run_and_wait([&] { b = fib_rw(pool, n - 2); });
  return a + b;
}

int fib_join(int n) {
  if (n < 2) return n;
  auto [a, b] = weft::join([n] { return fib_join(n - 1); }, [n] { return fib_join(n - 2); });
  return a + b;
}

// fib(n) and the calls of fib(n) that fork (n >= 2), which is fib(n + 1) - 1:
// iterative, so that checking costs no instructions that grow with n.
std::int64_t fib_iter(int n) {
  std::int64_t a = 0;
  std::int64_t b = 1;
  for (int i = 0; i < n; ++i) b = std::exchange(a, b) + b;
  return a;
}
std::int64_t fib_forks(int n) { return fib_iter(n + 1) - 1; }

constexpr int children = 10;

std::int64_t skynet_group(weft::pool& pool, std::int64_t num, int levels) {
  if (levels == 0) return num;
  std::array<std::int64_t, children> sums{};
  weft::task_group g{pool};
  for (int i = 0; i < children; ++i) {
    g.spawn([&sums, &pool, num, levels, i] {
      sums[static_cast<std::size_t>(i)] = skynet_group(pool, num * children + i, levels - 1);
    });
  }
  g.wait();
  return std::accumulate(sums.begin(), sums.end(), std::int64_t{0});
}

std::int64_t skynet_split(std::int64_t num, int levels, int lo, int hi);

std::int64_t skynet_join(std::int64_t num, int levels) {
  if (levels == 0) return num;
  return skynet_split(num, levels, 0, children);
}

std::int64_t skynet_split(std::int64_t num, int levels, int lo, int hi) {
  if (hi - lo == 1) return skynet_join(num * children + lo, levels - 1);
  const int mid = lo + (hi - lo) / 2;
  auto [a, b] = weft::join([=] { return skynet_split(num, levels, lo, mid); },
                           [=] { return skynet_split(num, levels, mid, hi); });
  return a + b;
}

// n * 100 groups of ten jobs that do next to nothing; returns what they stored.
std::int64_t empty_groups(weft::pool& pool, int n) {
  std::int64_t sum = 0;
  for (int round = 0; round < n * 100; ++round) {
    std::array<int, children> out{};
    weft::task_group g{pool};
    for (int i = 0; i < children; ++i) {
      g.spawn([&out, i] { out[static_cast<std::size_t>(i)] = i + 1; });
    }
    g.wait();
    sum += std::accumulate(out.begin(), out.end(), 0);
  }
  return sum;
}

// The inner nodes of a skynet tree with `levels` levels below the root.
std::int64_t skynet_forks(int levels) {
  std::int64_t nodes = 0;
  for (std::int64_t k = 1; levels > 0; --levels, k *= children) nodes += k;
  return nodes;
}
std::int64_t skynet_sum(int levels) {
  std::int64_t leaves = 1;
  for (int i = 0; i < levels; ++i) leaves *= children;
  return leaves * (leaves - 1) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view shapes[] = {"fib", "fib_rw", "fib_join", "skynet", "skynet_join", "empty"};
  if (argc != 4 || std::find(std::begin(shapes), std::end(shapes), argv[1]) == std::end(shapes)) {
    std::fprintf(stderr, "usage: %s fib|fib_rw|fib_join|skynet|skynet_join|empty n threads\n",
                 argv[0]);
    return 2;
  }
  const std::string_view shape = argv[1];
  const int n = std::atoi(argv[2]);
  const auto threads = static_cast<std::size_t>(std::atoi(argv[3]));
  weft::pool p{{.threads = threads}};
  bool right = true;
  std::int64_t forks = 0;
  for (const int k : {n - 2, n}) {
    if (shape.starts_with("fib")) {
      const int r = p.submit([&p, shape, k] {
                       if (shape == "fib") return fib_group(p, k);
                       if (shape == "fib_rw") return fib_rw(p, k);
                       return fib_join(k);
                     }).get();
      right = right && r == fib_iter(k);
      forks += fib_forks(k);
    } else if (shape == "empty") {
      const std::int64_t r = p.submit([&p, k] { return empty_groups(p, k); }).get();
      right = right && r == std::int64_t{k} * 100 * 55;
      forks += std::int64_t{k} * 100;
    } else {
      const std::int64_t r =
          p.submit([&p, shape, k] {
             return shape == "skynet" ? skynet_group(p, 0, k) : skynet_join(0, k);
           }).get();
      right = right && r == skynet_sum(k);
      forks += skynet_forks(k);
    }
  }
  std::printf("%s(%d): %s, forks %lld\n", argv[1], n, right ? "right" : "WRONG",
              static_cast<long long>(forks));
  return right ? 0 : 1;
}
