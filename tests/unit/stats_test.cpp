// pool::stats() per worker and reset_stats() (docs/control.md, "Statistics").
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

class stats_at : public ::testing::TestWithParam<std::size_t> {};

TEST_P(stats_at, every_job_a_worker_takes_is_counted_once) {
  const std::size_t workers = GetParam();
  weft::pool pool{{.threads = workers}};
  const std::size_t jobs = weft::test::scaled(10'000, 100);
  // Spawned from a job: they go to that worker's deque, and the others
  // steal them.
  pool.submit([&pool, jobs] {
        weft::task_group tg{pool};
        for (std::size_t i = 0; i < jobs; ++i) tg.spawn([] {});
        tg.wait();
      })
      .get();
  pool.wait();
  const weft::pool_stats s = pool.stats();
  ASSERT_EQ(s.per_worker.size(), workers);
  std::uint64_t sum = 0;
  for (const auto& w : s.per_worker) sum += w.jobs;
  EXPECT_EQ(s.total.jobs, sum);
  // The submitted job and the spawned ones, each taken once by a worker.
  EXPECT_EQ(s.total.jobs, jobs + 1);
  EXPECT_LE(s.total.steals, s.total.steal_attempts);
  EXPECT_LE(s.total.steals, s.total.jobs);
}

TEST_P(stats_at, busy_and_idle_add_up_to_the_time_since_the_reset) {
  weft::pool pool{{.threads = GetParam()}};
  // Every worker first reaches its idle loop and parks (at most 10 s): one
  // still starting when the counters are reset counts that time as busy.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  auto all_parked = [&] {
    const weft::pool_stats s = pool.stats();
    return std::all_of(s.per_worker.begin(), s.per_worker.end(),
                       [](const weft::worker_stats& w) { return w.parks > 0; });
  };
  while (!all_parked() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const auto before = std::chrono::steady_clock::now();
  pool.reset_stats();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const weft::pool_stats s = pool.stats();
  const auto after = std::chrono::steady_clock::now();
  for (const auto& w : s.per_worker) {
    EXPECT_EQ(w.jobs, 0U);
    EXPECT_LE(w.busy + w.idle, after - before);
    EXPECT_GE(w.busy + w.idle, std::chrono::milliseconds(30));
    // Nothing ran: all but the last wake-up's few microseconds are idle.
    EXPECT_GE(w.idle, std::chrono::milliseconds(20));
  }
}

TEST_P(stats_at, reset_starts_the_worker_counters_afresh) {
  weft::pool pool{{.threads = GetParam()}};
  for (int i = 0; i < 100; ++i) pool.submit([] {}).get();
  EXPECT_GE(pool.stats().total.jobs, 100U);
  pool.reset_stats();
  EXPECT_EQ(pool.stats().total.jobs, 0U);
  pool.submit([] {}).get();
  EXPECT_EQ(pool.stats().total.jobs, 1U);
}

INSTANTIATE_TEST_SUITE_P(workers, stats_at, ::testing::Values(1, 2, 4, 8),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

TEST(stats, sleeping_workers_count_parks_and_wakeups) {
  weft::pool pool{{.threads = 2}};
  pool.reset_stats();
  for (int i = 0; i < 5; ++i) {
    // Idle long enough for every worker to park, then wake one with a job.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pool.submit([] {}).get();
  }
  const weft::pool_stats s = pool.stats();
  EXPECT_GE(s.total.parks, 5U);
  EXPECT_GE(s.total.wakeups, 4U);
  EXPECT_GT(s.total.idle, s.total.busy);
}

TEST(stats, a_sequential_pool_has_no_worker_counters) {
  weft::pool pool{{.threads = 0}};
  pool.submit([] {}).get();
  EXPECT_TRUE(pool.stats().per_worker.empty());
  EXPECT_EQ(pool.stats().total.jobs, 0U);
  pool.reset_stats();
}

}  // namespace
