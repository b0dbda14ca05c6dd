// expect-only: weft::reduce: random-access iterators only
#include <list>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  std::list<int> l{1, 2, 3};
  return weft::reduce(pool, l.begin(), l.end(), 0);
}
