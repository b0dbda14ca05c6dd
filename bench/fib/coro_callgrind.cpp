// The instruction count of one fib call, as coroutines (weft::coro with
// co_await weft::join) or as weft::join of callables, for callgrind
// (docs/coroutines.md, "Join: what is stolen"). Not a timing benchmark:
//   valgrind --tool=callgrind build/release/bench/weft_coro_callgrind coro 22 1
// (and 20): the difference of the two totals over the difference of the
// calls made (48,952) is the cost of one call. Arguments: coro|join, n, the
// pool's thread count. Warms up with fib(n - 2) first; exits 1 on a wrong
// result.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <weft/weft.hpp>

namespace {

weft::coro<int> fib_coro(int n) {
  if (n < 2) co_return n;
  auto [a, b] = co_await weft::join(fib_coro(n - 1), fib_coro(n - 2));
  co_return a + b;
}

int fib_join(int n) {
  if (n < 2) return n;
  auto [a, b] = weft::join([n] { return fib_join(n - 1); }, [n] { return fib_join(n - 2); });
  return a + b;
}

int fib_plain(int n) { return n < 2 ? n : fib_plain(n - 1) + fib_plain(n - 2); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || (std::strcmp(argv[1], "coro") != 0 && std::strcmp(argv[1], "join") != 0)) {
    std::fprintf(stderr, "usage: %s coro|join n threads\n", argv[0]);
    return 2;
  }
  const bool coro = std::strcmp(argv[1], "coro") == 0;
  const int n = std::atoi(argv[2]);
  const auto threads = static_cast<std::size_t>(std::atoi(argv[3]));
  weft::pool p{{.threads = threads}};
  int r = 0;
  for (const int k : {n - 2, n}) {
    r = coro ? weft::sync_wait(p, fib_coro(k)) : p.submit([k] { return fib_join(k); }).get();
  }
  std::printf("fib(%d) = %d\n", n, r);
  return r == fib_plain(n) ? 0 : 1;
}
