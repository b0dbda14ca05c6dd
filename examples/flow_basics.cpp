// A data-flow program written in order: weft infers which tasks may run in
// parallel from what each declares it reads and writes. Shows every access
// mode, wait(x) for one result mid-program, after() on a future, and a dump.
#include <atomic>
#include <cstdio>
#include <functional>
#include <iostream>
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 2}};
  weft::flow flow{pool, {.keep_graph = true}};

  std::vector<int> input(1000);
  int scale = 0;
  long total = 0;
  long histogram_sum = 0;
  std::atomic<long> hits{0};
  long checksum = 0;

  // write: exclusive. The two fills below touch different objects, so they
  // may run at the same time.
  flow.emplace(
          [](std::vector<int>& v) {
            for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int>(i);
          },
          weft::write(input))
      .name("fill");
  flow.emplace([](int& s) { s = 3; }, weft::write(scale)).name("scale");

  // read: these four run concurrently once "fill" and "scale" are done, and
  // each adds to `total` through a private copy (reduce) folded in at the end.
  for (int part = 0; part < 4; ++part) {
    flow.emplace(
        [part](const std::vector<int>& v, const int& s, long& sum) {
          for (std::size_t i = static_cast<std::size_t>(part); i < v.size(); i += 4)
            sum += static_cast<long>(v[i]) * s;
        },
        weft::read(input), weft::read(scale), weft::reduce(total, std::plus<>{}));
  }

  // commute: one at a time, in any order. concurrent: at the same time; the
  // tasks synchronise themselves (here with an atomic).
  for (int part = 0; part < 4; ++part) {
    flow.emplace([part](long& h) { h += part; }, weft::commute(histogram_sum));
    flow.emplace([](std::atomic<long>& n) { n.fetch_add(1); }, weft::concurrent(hits));
  }

  // wait(x): returns once every task so far that touches `total` is done,
  // without waiting for unrelated ones.
  flow.wait(total);
  std::printf("total = %ld (expect %ld)\n", total, 3L * 999 * 1000 / 2);

  // after(future): ordered after work submitted to the pool directly.
  weft::future<int> seed = pool.submit([] { return 7; });
  flow.emplace([](long& c, const long& t) { c = t + 1; }, weft::write(checksum), weft::read(total),
               weft::after(seed))
      .name("checksum");

  flow.dump(std::cout);  // GraphViz DOT of the tasks since the last wait()
  flow.wait();           // everything; rethrows the first exception, if any
  std::printf("histogram_sum = %ld, hits = %ld, checksum = %ld, seed = %d\n", histogram_sum,
              hits.load(), checksum, seed.get());
  const bool ok =
      total == 3L * 999 * 1000 / 2 && histogram_sum == 6 && hits == 4 && checksum == total + 1;
  return ok ? 0 : 1;
}
