// expect-only: weft::transform: f's result must be assignable to an element of the output
#include <vector>
#include <weft/weft.hpp>

struct point {
  int x = 0;
  int y = 0;
};

int main() {
  weft::pool pool{{.threads = 1}};
  std::vector<int> in{1, 2, 3};
  std::vector<point> out(3);
  weft::transform(pool, in.begin(), in.end(), out.begin(), [](int x) { return x; });
  return 0;
}
