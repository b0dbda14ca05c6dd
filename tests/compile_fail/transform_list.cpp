// expect-only: weft::transform: random-access input iterators only
#include <list>
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  std::list<int> in{1, 2, 3};
  std::vector<int> out(3);
  weft::transform(pool, in.begin(), in.end(), out.begin(), [](int x) { return x + 1; });
  return 0;
}
