// Editing a built graph between runs: a placeholder stage gets its work
// later, the work is swapped for a faster version, and an edge that is no
// longer needed is removed, without rebuilding the graph.
#include <cstdio>
#include <string>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 2}};
  weft::graph g;
  std::string out;
  int checks = 0;

  auto load = g.emplace([&] { out = "data"; }).name("load");
  auto stage = g.placeholder().name("stage");  // work decided later
  auto check = g.emplace([&] { ++checks; }).name("check");
  auto store = g.emplace([&] { std::printf("stored: %s\n", out.c_str()); }).name("store");
  load.precede(stage, check);
  stage.precede(store);
  check.precede(store);

  pool.run(g).get();  // the placeholder does nothing: "data"

  stage.work([&] { out += " -> transformed"; });
  pool.run(g).get();  // "data -> transformed"

  stage.work([&] { out += " -> transformed fast"; });
  load.remove_successor(check);  // check no longer waits for load
  pool.run(g).get();             // "data -> transformed fast"

  const bool ok = out == "data -> transformed fast" && checks == 3;
  std::printf("%s, %d checks\n", ok ? "as expected" : "WRONG", checks);
  return ok ? 0 : 1;
}
