// expect-only: weft::transform: the output must be a random-access iterator
#include <iterator>
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  std::vector<int> in{1, 2, 3};
  std::vector<int> out;
  weft::transform(pool, in.begin(), in.end(), std::back_inserter(out), [](int x) { return x; });
  return 0;
}
