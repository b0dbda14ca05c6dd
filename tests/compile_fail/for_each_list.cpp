// expect-only: weft::for_each: random-access iterators only
#include <list>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  std::list<int> l{1, 2, 3};
  weft::for_each(pool, l.begin(), l.end(), [](int& x) { ++x; });
  return 0;
}
