// A job of one pool uses another pool and waits for it; waiting on a worker
// runs other jobs meanwhile, so nothing deadlocks (seed 002's nested
// schedulers, including the inner job that submits back to the outer pool).
#include <cstdio>
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool outer{{.threads = 2, .name = "outer"}};
  std::vector<weft::future<int>> results;
  results.reserve(4);
  for (int i = 0; i < 4; ++i) {
    results.push_back(outer.submit([&outer, i] {
      weft::pool inner{{.threads = 2, .name = "inner"}};
      auto here = inner.submit([i] { return i; });
      auto back = inner.submit([&outer, i] { return outer.submit([i] { return 10 * i; }).get(); });
      return here.get() + back.get();
    }));
  }
  int sum = 0;
  for (auto& r : results) sum += r.get();
  std::printf("sum = %d\n", sum);
  return sum == 66 ? 0 : 1;
}
