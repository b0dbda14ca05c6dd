// expect-only: weft::transform_reduce: transform_op must be callable with an element
#include <functional>
#include <string>
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  std::vector<int> v{1, 2, 3};
  return weft::transform_reduce(pool, v.begin(), v.end(), 0, std::plus<>{},
                                [](const std::string& s) { return static_cast<int>(s.size()); });
}
