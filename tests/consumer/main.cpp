// Smoke test of an installed or embedded weft: the public header, the
// weft::weft target, and one task through a pool.
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 2}};
  auto f = pool.submit([] { return 21 * 2; });
  return f.get() == 42 ? 0 : 1;
}
