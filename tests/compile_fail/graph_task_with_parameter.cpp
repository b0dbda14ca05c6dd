// expect: weft::graph::emplace, task::work: a task is callable with no arguments
#include <weft/weft.hpp>

int main() {
  weft::graph g;
  g.emplace([](int unknown) { (void)unknown; });
}
