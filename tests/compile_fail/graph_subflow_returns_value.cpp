// expect: weft::graph::emplace, task::work: a task taking a weft::subflow& returns void
#include <weft/weft.hpp>

int main() {
  weft::graph g;
  g.emplace([](weft::subflow& sf) {
    sf.emplace([] {});
    return 1;  // a subflow task cannot choose successors
  });
}
