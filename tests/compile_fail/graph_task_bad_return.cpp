// expect: weft::graph::emplace, task::work: a task returns void, an integral successor index
#include <string>
#include <weft/weft.hpp>

int main() {
  weft::graph g;
  g.emplace([] { return std::string{"not an index"}; });
}
