// Continuations and batches: LibZ.Jobs' continueWith chain (load, parse,
// sum, each step a job of its own once the previous one has finished) and
// Hipe's futures example (submit a batch, wait for all, get all), a batch
// of detached jobs, and a future chained after its pool is gone.
#include <cstddef>
#include <cstdio>
#include <numeric>
#include <ranges>
#include <sstream>
#include <string>
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 2, .name = "example"}};

  // continueWith: no thread waits between the steps; an exception in one
  // step skips the rest and comes out of get().
  weft::future<long> total = pool.submit([] { return std::string{"1 2 3 4 5 6 7 8 9 10"}; })
                                 .then([](const std::string& text) {
                                   std::istringstream in{text};
                                   std::vector<long> numbers;
                                   for (long x = 0; in >> x;) numbers.push_back(x);
                                   return numbers;
                                 })
                                 .then([](std::vector<long> numbers) {
                                   return std::accumulate(numbers.begin(), numbers.end(), 0L);
                                 });

  // Hipe's submitInBatch + HipeFutures: one publication for the whole
  // batch, then one future of all the results, in order.
  std::vector<std::function<long()>> batch;
  batch.reserve(1000);
  for (long i = 0; i < 1000; ++i) batch.emplace_back([i] { return i * i; });
  std::vector<weft::future<long>> futures = pool.submit_all(batch);
  std::vector<long> squares = weft::when_all(std::move(futures)).get();
  const long sum_of_squares = std::accumulate(squares.begin(), squares.end(), 0L);

  // A batch of detached jobs: spawn_all queues one job for the 10,000
  // callables, which hands halves of what is left to idle workers; each
  // callable writes its own slot, and pool.wait() waits for them all.
  std::vector<long> cubes(10'000);
  pool.spawn_all(std::views::iota(0L, 10'000L) | std::views::transform([&cubes](long i) {
                   return [&cubes, i] { cubes[static_cast<std::size_t>(i)] = i * i * i; };
                 }));
  pool.wait();
  const long cube_checks = std::accumulate(cubes.begin(), cubes.end(), 0L) % 1'000'003;

  // A future may outlive its pool. Chained once the pool is gone, its
  // continuation runs inside then(), on this thread; when_all of nothing is
  // a ready future of an empty vector.
  weft::future<long> kept;
  {
    weft::pool short_lived{{.threads = 1, .name = "short-lived"}};
    kept = short_lived.submit([] { return 41L; });
  }  // the destructor ran the job
  const long late = std::move(kept).then([](long x) { return x + 1; }).get();
  const std::size_t nothing = weft::when_all(std::vector<weft::future<long>>{}).get().size();

  const long sum = total.get();
  std::printf(
      "continueWith chain: %ld; sum of 1000 squares from a batch: %ld; of 10000 cubes, "
      "mod 1000003: %ld; chained after its pool: %ld; when_all of nothing: %zu values\n",
      sum, sum_of_squares, cube_checks, late, nothing);
  long expected_cubes = 0;
  for (long i = 0; i < 10'000; ++i) expected_cubes += i * i * i;
  return sum == 55 && sum_of_squares == 332'833'500 && cube_checks == expected_cubes % 1'000'003 &&
                 late == 42 && nothing == 0
             ? 0
             : 1;
}
