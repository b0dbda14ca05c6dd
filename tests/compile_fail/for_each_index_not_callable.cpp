// expect-only: weft::for_each_index: f must be callable with an index
#include <string>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  weft::for_each_index(pool, 0, 10, [](std::string& s) { s.clear(); });
  return 0;
}
