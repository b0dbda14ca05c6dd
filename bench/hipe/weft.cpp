// Hipe's benchmarks: weft on a pool of 2 workers, called from the main
// thread, which only hands over the jobs and waits. compute: K pool.submit,
// then get() on every future (Hipe's submitForReturn and get). memory:
// pool.spawn per job, then pool.wait() (Hipe's submit and waitForTasks), or
// pool.spawn_all in batches of 1,000 (its submitInBatch), which publishes
// and wakes once per batch instead of once per job.
#include <algorithm>
#include <memory>
#include <ranges>
#include <vector>
#include <weft/weft.hpp>

#include "hipe/hipe.hpp"

namespace {

namespace hp = bench::hipe;

std::shared_ptr<weft::pool> make_pool() {
  return std::make_shared<weft::pool>(weft::pool_options{.threads = bench::workers});
}

struct memory_job {
  std::int64_t* sums;
  std::int64_t i;
  void operator()() const { hp::memory_job(sums, i); }
};

constexpr std::int64_t batch_size = 1000;

const int timing = bench::on_startup(bench::suite::timing, [] {
  hp::add_compute("submit", [] {
    return [pool = make_pool()](double* m, std::size_t jobs) {
      std::vector<weft::future<void>> futures;
      futures.reserve(jobs);
      for (std::size_t k = 0; k < jobs; ++k) {
        futures.push_back(pool->submit([m, k, jobs] { hp::compute_share(m, k, jobs); }));
      }
      for (weft::future<void>& f : futures) f.get();
    };
  });
  hp::add_memory("spawn", [] {
    return [pool = make_pool()](std::int64_t* sums) {
      for (std::int64_t i = 0; i < hp::memory_jobs; ++i) pool->spawn(memory_job{sums, i});
      pool->wait();
    };
  });
  hp::add_memory("spawn_all", [] {
    return [pool = make_pool()](std::int64_t* sums) {
      for (std::int64_t first = 0; first < hp::memory_jobs; first += batch_size) {
        const std::int64_t last = std::min(first + batch_size, hp::memory_jobs);
        pool->spawn_all(std::views::iota(first, last) |
                        std::views::transform([sums](std::int64_t i) {
                          return memory_job{sums, i};
                        }));
      }
      pool->wait();
    };
  });
});

}  // namespace
