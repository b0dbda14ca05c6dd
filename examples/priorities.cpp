// Priorities: an urgent job submitted behind a queue of ordinary ones runs
// first, and background work runs when nothing else waits. A one-worker
// pool, paused while the jobs are queued, shows the order.
#include <cstdio>
#include <mutex>
#include <string>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1}};
  std::mutex mutex;
  std::string order;
  auto log = [&](char c) {
    return [&, c] {
      std::lock_guard lock{mutex};
      order += c;
    };
  };

  pool.pause();
  pool.spawn(weft::priority::low, log('b'));  // background: last
  for (int i = 0; i < 3; ++i) pool.spawn(log('n'));
  pool.spawn(weft::priority::high, log('U'));  // urgent: first
  auto urgent = pool.submit(weft::priority::high, [] { return 1; });
  pool.resume();
  (void)urgent.get();
  pool.wait();

  std::printf("order: %s (U urgent, n normal, b background)\n", order.c_str());
  return order == "Unnnb" ? 0 : 1;
}
