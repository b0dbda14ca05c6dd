// expect-only: weft::collect<R>: R must be a move-constructible value type
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  auto refs = weft::collect<int&>(pool, [](auto& c) { c.spawn([] {}); });
  return 0;
}
