// expect: f must be callable with no arguments, or with a weft::timer&
// A timer's callable that takes an int: spawn_after says what it accepts.
#include <chrono>
#include <weft/weft.hpp>

int main() {
  weft::pool pool;
  pool.spawn_after(std::chrono::milliseconds{1}, [](int) {});
}
