// expect-only: weft::map: the range must be sized and random-access
#include <list>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  std::list<int> l{1, 2, 3};
  auto squares = weft::map(pool, l, [](int x) { return x * x; });
  return 0;
}
