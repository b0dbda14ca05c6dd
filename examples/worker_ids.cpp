// Which worker runs a job: this_worker::index() is below pool.slots() in every
// job (0..size()-1 on a worker, size() on the one outside thread that runs
// jobs while it waits) and empty outside jobs (seed 002's worker ids). So
// per-worker state sized pool.slots() needs no lock.
#include <atomic>
#include <cstdio>
#include <optional>
#include <set>
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 2}};
  std::vector<weft::future<std::optional<std::size_t>>> ids;
  ids.reserve(16);
  for (int i = 0; i < 16; ++i)
    ids.push_back(pool.submit([] { return weft::this_worker::index(); }));
  std::set<std::size_t> seen;
  for (auto& f : ids) {
    const auto id = f.get();
    if (!id || *id >= pool.slots()) return 1;
    seen.insert(*id);
  }
  std::printf("%zu workers; jobs ran on %zu of them; main thread index: %s\n", pool.size(),
              seen.size(), weft::this_worker::index() ? "set" : "empty");
  if (weft::this_worker::index()) return 1;

  // Per-worker partial sums, one per slot: wait_until lets the main thread
  // run jobs too, as the helper (index size()).
  std::vector<long> partial(pool.slots(), 0);
  std::atomic<int> left{10000};
  for (int i = 1; i <= 10000; ++i) {
    pool.spawn([&, i] {
      partial[weft::this_worker::index().value()] += i;
      left.fetch_sub(1, std::memory_order_release);
    });
  }
  pool.wait_until([&] { return left.load(std::memory_order_acquire) == 0; });
  long sum = 0;
  for (std::size_t s = 0; s < partial.size(); ++s) {
    std::printf("slot %zu: %ld\n", s, partial[s]);
    sum += partial[s];
  }
  std::printf("sum of 1..10000 = %ld\n", sum);
  return sum == 50005000L ? 0 : 1;
}
