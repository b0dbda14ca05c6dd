// Smoke test of an installed or embedded weft, on whatever target it was
// built for (scripts/test.sh runs it natively, with libc++, and on AArch64
// under qemu-user): the public header, the weft::weft target, and each main
// front end once: a pool's future, join, task_group, a graph, a flow,
// reduce and a timer. Prints what failed and exits 1, or exits 0.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <numeric>
#include <vector>
#include <weft/weft.hpp>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "weft_consumer: %s failed\n", what);
    ++failures;
  }
}

long fib(int n) {
  if (n < 2) return n;
  auto [a, b] = weft::join([n] { return fib(n - 1); }, [n] { return fib(n - 2); });
  return a + b;
}

}  // namespace

int main() {
  weft::pool pool{{.threads = 2}};

  check(pool.submit([] { return 21 * 2; }).get() == 42, "submit/get");
  check(pool.submit([] { return fib(20); }).get() == 6765, "join");

  std::atomic<int> spawned{0};
  {
    weft::task_group group{pool};
    for (int i = 0; i < 10; ++i) group.spawn([&spawned] { spawned.fetch_add(1); });
    check(group.wait() == weft::group_status::complete, "task_group status");
  }
  check(spawned.load() == 10, "task_group");

  weft::graph g;
  int a = 0;
  int b = 0;
  int product = 0;
  auto set_a = g.emplace([&a] { a = 6; });
  auto set_b = g.emplace([&b] { b = 7; });
  auto multiply = g.emplace([&] { product = a * b; });
  multiply.succeed(set_a, set_b);
  pool.run(g).get();
  check(product == 42, "graph");

  std::vector<int> v(1000);
  std::iota(v.begin(), v.end(), 1);
  check(weft::reduce(pool, v.begin(), v.end(), 0L) == 500500L, "reduce");

  {
    weft::flow flow{pool};
    int x = 0;
    long y = 0;
    flow.emplace([](int& out) { out = 20; }, weft::write(x));
    flow.emplace([](const int& in, long& out) { out = in + 22; }, weft::read(x), weft::write(y));
    flow.wait();
    check(y == 42, "flow");
  }

  std::atomic<bool> fired{false};
  pool.spawn_after(std::chrono::milliseconds{5}, [&fired] { fired.store(true); });
  // pool.wait() waits for fired timers only: wait for what this one sets.
  pool.wait_until([&fired] { return fired.load(); });
  check(fired.load(), "timer");

  if (failures == 0)
    std::puts("weft_consumer: pool, join, task_group, graph, reduce, flow, timer OK");
  return failures == 0 ? 0 : 1;
}
