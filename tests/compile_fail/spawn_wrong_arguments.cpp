// expect: weft::pool::spawn/submit(f, args...): f must be callable with copies of args
#include <string>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  // An int cannot become a std::string&.
  pool.spawn([](std::string& s) { s += "!"; }, 42);
  pool.wait();
}
