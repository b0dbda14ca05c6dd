// expect-only: weft::collect<R>(pool, body): body must be callable with a weft::collector<R>&
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  auto results = weft::collect<int>(pool, [](int) {});
  return 0;
}
