// Batches: weft, on a pool of bench::workers workers, from the main thread
// (not a worker: its jobs go through its lane). One by one is pool.spawn in
// a loop; batches are pool.spawn_all over a vector of k callables (one
// publication and one wake-up per batch). Futures: pool.submit_all of all
// of them in batches of 1,000 (Hipe's submitInBatch), or pool.submit one by
// one, then weft::when_all (wait all) and get (get all), each phase timed
// on its own for the counters submit_ns and when_all_ns (issue 9's target:
// when_all at most twice the time of submitting).
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>
#include <weft/weft.hpp>

#include "batches/batches.hpp"

namespace {

struct empty_job {
  void operator()() const noexcept { bench::count_job(); }
};

auto jobs_setup() {
  auto pool = std::make_unique<weft::pool>(weft::pool_options{.threads = bench::workers});
  return [pool = std::move(pool)](std::int64_t n, std::int64_t k) {
    if (k == 1) {
      for (std::int64_t i = 0; i < n; ++i) pool->spawn(empty_job{});
    } else {
      const std::vector<empty_job> batch(static_cast<std::size_t>(k));
      for (std::int64_t i = 0; i < n; i += k) pool->spawn_all(batch);
    }
    pool->wait();
  };
}

struct value_job {
  std::int64_t i;
  std::int64_t operator()() const noexcept { return bench::batches::future_value(i); }
};

std::int64_t sum_all(std::vector<weft::future<std::int64_t>> futures) {
  return bench::batches::sum(weft::when_all(std::move(futures)).get());
}

template <bool Batched>
auto futures_setup() {
  auto pool = std::make_unique<weft::pool>(weft::pool_options{.threads = bench::workers});
  return [pool = std::move(pool)](std::int64_t n) {
    using clock = std::chrono::steady_clock;
    const clock::time_point start = clock::now();
    std::vector<weft::future<std::int64_t>> futures;
    futures.reserve(static_cast<std::size_t>(n));
    if constexpr (Batched) {
      constexpr std::int64_t batch_size = 1000;
      std::vector<value_job> batch;
      for (std::int64_t first = 0; first < n; first += batch_size) {
        batch.clear();
        for (std::int64_t i = first; i < n && i < first + batch_size; ++i) batch.push_back({i});
        for (auto& f : pool->submit_all(batch)) futures.push_back(std::move(f));
      }
    } else {
      for (std::int64_t i = 0; i < n; ++i) futures.push_back(pool->submit(value_job{i}));
    }
    const clock::time_point submitted = clock::now();
    const std::int64_t sum = sum_all(std::move(futures));
    const clock::time_point done = clock::now();
    return bench::batches::timed_sum{
        .sum = sum, .submit = submitted - start, .when_all = done - submitted};
  };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::batches::add_jobs("spawn", {1}, jobs_setup);
  bench::batches::add_jobs("spawn_all", {10, 1000}, jobs_setup);
  bench::batches::add_futures("submit_all_when_all", futures_setup<true>);
  bench::batches::add_futures("submit_when_all", futures_setup<false>);
});

}  // namespace
