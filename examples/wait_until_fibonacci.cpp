// Seed 000's recursive Fibonacci: spawn two jobs, then run jobs until both are
// done. wait_until never blocks a worker, so the recursion cannot deadlock.
#include <atomic>
#include <cstdio>
#include <weft/weft.hpp>

int fib(weft::pool& pool, int n) {
  if (n < 2) return n;
  int a = 0;
  int b = 0;
  std::atomic<int> finished{0};
  pool.spawn([&] {
    a = fib(pool, n - 1);
    finished.fetch_add(1, std::memory_order_release);
  });
  pool.spawn([&] {
    b = fib(pool, n - 2);
    finished.fetch_add(1, std::memory_order_release);
  });
  pool.wait_until([&] { return finished.load(std::memory_order_acquire) == 2; });
  return a + b;
}

int main() {
  weft::pool pool{{.threads = 2}};
  const int result = fib(pool, 22);
  std::printf("fib(22) = %d\n", result);
  return result == 17711 ? 0 : 1;
}
