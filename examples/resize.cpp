// Resizing a running pool (seed 004's Hipe resize): a service that grows
// its pool for a burst of work and shrinks it afterwards, with per-worker
// counters sized once by slots() so that they stay valid across resizes.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 1, .max_threads = 4, .name = "elastic"}};
  // One counter per slot; slots() stays max_threads + 1 however the pool is
  // resized, so this vector never needs to change.
  std::vector<std::atomic<long>> per_worker(pool.slots());
  auto work = [&] {
    std::this_thread::sleep_for(std::chrono::microseconds{20});  // a little work to share
    per_worker[weft::this_worker::index().value()].fetch_add(1, std::memory_order_relaxed);
  };

  long sent = 0;
  for (const std::size_t workers : {1, 4, 2, 1}) {
    pool.resize(workers);  // returns once the pool has `workers` workers
    std::vector<long> before(per_worker.size());
    for (std::size_t s = 0; s < before.size(); ++s) before[s] = per_worker[s].load();
    for (int i = 0; i < 2000; ++i, ++sent) pool.spawn(work);
    pool.wait();
    std::printf("%zu worker(s), jobs per slot:", pool.size());
    for (std::size_t s = 0; s < before.size(); ++s) {
      std::printf(" %ld", per_worker[s].load() - before[s]);
    }
    std::printf("\n");
  }

  long total = 0;
  for (std::size_t s = 0; s < pool.slots(); ++s) {
    const long n = per_worker[s].load();
    if (n != 0) std::printf("slot %zu ran %ld jobs\n", s, n);
    total += n;
  }
  std::printf("%ld of %ld jobs ran\n", total, sent);
  return total == sent ? 0 : 1;
}
