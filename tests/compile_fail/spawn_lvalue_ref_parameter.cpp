// expect: use std::ref(x) to pass x by reference
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  int counter = 0;
  // The copy of counter is passed as an rvalue, which an int& cannot bind.
  pool.spawn([](int& c) { ++c; }, counter);
  pool.wait();
  return counter;
}
