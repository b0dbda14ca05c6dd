// expect: weft::submit_scoped(pool, f): f must be callable with a weft::scope&
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  auto f = weft::submit_scoped(pool, [] { return 1; });
  return f.valid() ? 0 : 1;
}
