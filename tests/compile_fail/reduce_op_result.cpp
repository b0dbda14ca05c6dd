// expect-only: weft::reduce/transform_reduce: op(T, element) must return something convertible to T
#include <vector>
#include <weft/weft.hpp>

struct sum {};

int main() {
  weft::pool pool{{.threads = 1}};
  std::vector<int> v{1, 2, 3};
  return weft::reduce(pool, v.begin(), v.end(), 0, [](int, int) { return sum{}; });
}
