// What each worker did: jobs run, steals, sleeps, time busy and idle
// (pool.stats(), docs/control.md "Statistics").
#include <cstdint>
#include <iostream>
#include <weft/weft.hpp>

namespace {

// Work that grows with i: the workers' shares and steals show the balance.
std::uint64_t spin(std::uint64_t i) {
  std::uint64_t x = i;
  for (std::uint64_t k = 0; k < 2'000 * (i % 16 + 1); ++k) x = x * 6364136223846793005ULL + 1;
  return x;
}

}  // namespace

int main() {
  weft::pool pool{{.threads = 2}};
  constexpr std::uint64_t jobs = 2'000;
  pool.reset_stats();
  // One job spawns the rest into its worker's deque; the other worker steals.
  pool.submit([&pool] {
        weft::task_group tg{pool};
        for (std::uint64_t i = 0; i < jobs; ++i) tg.spawn([i] { (void)spin(i); });
        tg.wait();
      })
      .get();
  pool.wait();

  const weft::pool_stats s = pool.stats();
  for (std::size_t i = 0; i < s.per_worker.size(); ++i) {
    const weft::worker_stats& w = s.per_worker[i];
    std::cout << "worker " << i << ": " << w.jobs << " jobs, " << w.steals << " stolen in "
              << w.steal_attempts << " attempts, " << w.parks << " parks, " << w.wakeups
              << " wake-ups, busy " << w.busy.count() / 1000 << " us, idle "
              << w.idle.count() / 1000 << " us\n";
  }
  std::cout << "total: " << s.total.jobs << " jobs\n";
  // Every job, the spawning one included, was taken by a worker exactly once.
  return s.total.jobs == jobs + 1 ? 0 : 1;
}
