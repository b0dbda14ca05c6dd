// expect-only: weft::for_each: f must be callable with an element
#include <string>
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  std::vector<int> v{1, 2, 3};
  weft::for_each(pool, v.begin(), v.end(), [](std::string& s) { s.clear(); });
  return 0;
}
