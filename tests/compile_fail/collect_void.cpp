// expect-only: weft::collect<void>: there are no results to collect
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  weft::collect<void>(pool, [](weft::collector<void>& c) { c.spawn([] {}); });
  return 0;
}
