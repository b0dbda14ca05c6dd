// expect-only: weft::for_each_index: begin and end must be integers
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  weft::for_each_index(pool, 0.0, 1.0, [](double) {});
  return 0;
}
