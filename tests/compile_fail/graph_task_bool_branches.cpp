// expect: or a range of them (a multi-condition task)
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::graph g;
  // bool is no successor index, neither alone nor in a range.
  g.emplace([] { return std::vector<bool>{true, false}; });
}
