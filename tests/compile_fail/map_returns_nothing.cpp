// expect-only: weft::map: f returns nothing; use weft::for_each
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  std::vector<int> v{1, 2, 3};
  auto nothing = weft::map(pool, v, [](int) {});
  return 0;
}
