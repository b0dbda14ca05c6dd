// Bounded submission: a fast producer cannot queue more than `capacity`
// jobs ahead of the workers. With overflow::block it waits for room; with
// run_here it does the work itself (libgomp's throttling); a callable
// decides per job, here keeping the jobs it got to run them later.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <vector>
#include <weft/weft.hpp>

int main() {
  std::atomic<std::int64_t> sum{0};
  constexpr std::int64_t jobs = 100'000;
  constexpr std::int64_t expected = jobs * (jobs - 1) / 2;
  bool right = true;

  {
    weft::pool pool{{.threads = 2, .capacity = 256, .on_full = weft::overflow::block}};
    for (std::int64_t i = 0; i < jobs; ++i) pool.spawn([&sum, i] { sum += i; });
    pool.wait();
    std::printf("block:    sum %lld, submissions that waited for room: %zu\n",
                static_cast<long long>(sum.load()), pool.stats().overflowed);
    right = right && sum.load() == expected;
  }

  sum = 0;
  {
    weft::pool pool{{.threads = 2, .capacity = 256, .on_full = weft::overflow::run_here}};
    for (std::int64_t i = 0; i < jobs; ++i) pool.spawn([&sum, i] { sum += i; });
    pool.wait();
    std::printf("run_here: sum %lld, jobs the producer ran itself: %zu\n",
                static_cast<long long>(sum.load()), pool.stats().overflowed);
    right = right && sum.load() == expected;
  }

  sum = 0;
  std::vector<weft::job> later;
  {
    weft::pool pool{{.threads = 2, .capacity = 16, .on_full = [&later](weft::job j) {
                       later.push_back(std::move(j));
                     }}};
    pool.pause();  // nothing starts: the 17th job on overflows
    for (std::int64_t i = 0; i < 100; ++i) pool.spawn([&sum, i] { sum += i; });
    std::printf("callable: %zu jobs set aside\n", later.size());
    for (weft::job& j : later) j.run();  // before the pool goes: it waits for them
    pool.resume();
    pool.wait();
    std::printf("callable: sum %lld\n", static_cast<long long>(sum.load()));
  }
  return right && sum.load() == 99 * 100 / 2 ? 0 : 1;
}
