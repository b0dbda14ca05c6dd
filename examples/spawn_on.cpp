// A job on a chosen worker: per-worker state that only its own worker
// touches, set up and read back through spawn_on/submit_on, with no lock.
// The jobs of one worker's mailbox start in the order they were sent.
#include <cstdio>
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 2}};
  // One scratch counter per worker, each touched only on its own worker.
  std::vector<long> per_worker(pool.size(), 0);
  for (int round = 0; round < 1000; ++round) {
    for (std::size_t w = 0; w < pool.size(); ++w) {
      pool.spawn_on(w, [&per_worker, w] { per_worker[w] += 1; });
    }
  }
  long total = 0;
  for (std::size_t w = 0; w < pool.size(); ++w) {
    // Queued behind worker w's increments: it sees them all.
    total += pool.submit_on(w,
                            [&per_worker, w] {
                              const std::size_t here = weft::this_worker::index().value_or(99);
                              std::printf("worker %zu counted %ld jobs on worker %zu\n", w,
                                          per_worker[w], here);
                              return per_worker[w];
                            })
                 .get();
  }
  return total == 1000 * static_cast<long>(pool.size()) ? 0 : 1;
}
