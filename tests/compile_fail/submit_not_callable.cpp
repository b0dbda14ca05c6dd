// expect: weft::pool::spawn/submit: f must be callable with no arguments
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  int not_a_function = 3;
  auto f = pool.submit(not_a_function);
  return f.valid() ? 0 : 1;
}
