// threads = 0: no worker threads; jobs run on the waiting thread in submission
// order, so the output is the same on every run (seed 002's Seq).
#include <cstdio>
#include <string>
#include <weft/weft.hpp>

int main() {
  std::string out;
  weft::pool outer{{.threads = 0}};
  outer.spawn([&] { out += "a"; });
  outer.spawn([&] {
    out += "b";
    weft::pool inner{{.threads = 0}};
    inner.spawn([&] {
      out += "c";
      outer.spawn([&] { out += "e"; });
    });
    inner.spawn([&] { out += "d"; });
    inner.wait();
  });
  outer.spawn([&] { out += "f"; });
  outer.wait();
  std::printf("%s\n", out.c_str());
  return out == "abcdfe" ? 0 : 1;
}
