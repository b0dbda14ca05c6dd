// A task graph built once and run several times: (a + b) * (c + d), with an
// empty task as a barrier, a condition task that loops, and a DOT dump.
#include <iostream>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 2}};
  weft::graph g;

  int a = 0;
  int b = 0;
  int c = 0;
  int d = 0;
  int sum_ab = 0;
  int sum_cd = 0;
  int product = 0;
  int round = 0;

  auto init = g.emplace([&] { round = 0; }).name("init");
  auto start = g.placeholder().name("start");
  init.precede(start);
  auto get_a = g.emplace([&] { a = round + 1; }).name("a");
  auto get_b = g.emplace([&] { b = 2; }).name("b");
  auto get_c = g.emplace([&] { c = 3; }).name("c");
  auto get_d = g.emplace([&] { d = 4; }).name("d");
  start.precede(get_a, get_b, get_c, get_d);
  // Every input is ready once the barrier is reached.
  auto inputs_ready = g.placeholder().name("inputs ready");
  inputs_ready.succeed(get_a, get_b, get_c, get_d);
  auto add_ab = g.emplace([&] { sum_ab = a + b; }).name("a + b");
  auto add_cd = g.emplace([&] { sum_cd = c + d; }).name("c + d");
  auto multiply = g.emplace([&] { product = sum_ab * sum_cd; }).name("product");
  inputs_ready.precede(add_ab, add_cd);
  multiply.succeed(add_ab, add_cd);

  // A condition task returns the index of the successor to run: here it
  // loops back to `start` until three rounds are done. `start` has a normal
  // predecessor (init) too: it runs once init has finished, and again each
  // time the condition picks it.
  auto again = g.emplace([&] { return ++round < 3 ? 0 : 1; }).name("again?");
  auto done = g.placeholder().name("done");
  multiply.precede(again);
  again.precede(start, done);

  g.dump(std::cout);

  int total = 0;
  for (int run = 0; run < 2; ++run) {
    pool.run(g).get();  // rethrows the first exception a task threw
    total += product;
  }
  std::cout << "product after the loop: " << product << "\n";
  // Last round: a = 3, so (3 + 2) * (3 + 4) = 35, twice.
  return total == 70 ? 0 : 1;
}
