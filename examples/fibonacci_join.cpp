// Fork-join with weft::join: no heap allocation, results as a pair.
#include <cstdio>
#include <weft/weft.hpp>

int fib(int n) {
  if (n < 2) return n;
  auto [a, b] = weft::join([&] { return fib(n - 1); }, [&] { return fib(n - 2); });
  return a + b;
}

int main() {
  weft::pool pool{{.threads = 2}};
  const int n = 30;
  const int result = pool.submit([] { return fib(n); }).get();
  std::printf("fib(%d) = %d\n", n, result);
  return result == 832040 ? 0 : 1;
}
