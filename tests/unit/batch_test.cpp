// pool::spawn_all keeps a batch's callables in one array and queues one job
// for them, which splits when a worker is idle (weft/batch.hpp), for a sized
// range of at least pool::batch_block_min (32) callables: every batch here
// but the nested ones of batches_spawned_by_a_batch_all_run. These tests
// check what that must not change: each callable still counts as a job for
// pause(), purge(), stats() and the error path, the batch spreads over the
// workers, sequential mode runs it in order, and every callable is gone
// before wait() returns. (continuation_test.cpp has the batch tests that do
// not depend on how a batch is queued.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <numeric>
#include <ranges>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

class batch_test : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] std::size_t workers() const { return GetParam(); }
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

TEST_P(batch_test, a_batch_spreads_over_the_workers) {
  if (workers() < 2) GTEST_SKIP() << "needs two workers";
  weft::pool pool{options()};
  // The first callable returns only once another thread has run one of the
  // batch: the batch's one job must hand part of itself to an idle worker
  // while the first callable runs, or the rest waits behind it.
  std::atomic<std::thread::id> last_other{};
  std::atomic<bool> gave_up{false};
  std::vector<std::function<void()>> batch;
  batch.emplace_back([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    while (last_other.load() == std::thread::id{} ||
           last_other.load() == std::this_thread::get_id()) {
      if (std::chrono::steady_clock::now() > deadline) {
        gave_up.store(true);
        return;
      }
      std::this_thread::yield();
    }
  });
  for (int i = 1; i < 64; ++i)
    batch.emplace_back([&] { last_other.store(std::this_thread::get_id()); });
  pool.spawn_all(batch);
  pool.wait();
  EXPECT_FALSE(gave_up.load()) << "no other worker ran any of the batch while its first ran";
}

TEST_P(batch_test, sequential_mode_runs_a_batch_in_order_before_later_jobs) {
  if (workers() != 0) GTEST_SKIP() << "sequential mode only";
  weft::pool pool{options()};
  std::vector<int> order;
  std::vector<std::function<void()>> batch;
  for (int i = 0; i < 100; ++i) batch.emplace_back([&order, i] { order.push_back(i); });
  pool.spawn([&order] { order.push_back(-1); });
  pool.spawn_all(batch);
  pool.spawn([&order] { order.push_back(100); });
  pool.wait();
  std::vector<int> expected(102);
  std::iota(expected.begin(), expected.end(), -1);
  EXPECT_EQ(order, expected);
}

TEST_P(batch_test, each_callable_counts_as_a_job_in_the_stats) {
  if (workers() != 1) GTEST_SKIP() << "one worker runs them all";
  weft::pool pool{options()};
  std::atomic<int> ran{0};
  pool.spawn_all(std::vector<std::function<void()>>(250, [&ran] { ran.fetch_add(1); }));
  pool.wait();
  EXPECT_EQ(ran.load(), 250);
  EXPECT_EQ(pool.stats().total.jobs, 250U);
}

TEST_P(batch_test, every_callable_is_destroyed_before_wait_returns) {
  weft::pool pool{options()};
  auto token = std::make_shared<int>(0);
  std::atomic<int> ran{0};
  std::vector<std::function<void()>> batch(weft::test::scaled(5'000, 500),
                                           [token, &ran] { ran.fetch_add(1); });
  for (int round = 0; round < 3; ++round) pool.spawn_all(batch);
  batch.clear();
  pool.wait();
  EXPECT_EQ(ran.load(), static_cast<int>(3 * weft::test::scaled(5'000, 500)));
  EXPECT_EQ(token.use_count(), 1) << "a callable of a batch outlived wait()";
}

// On one worker, a pause from inside the batch stops it at the next
// callable, deterministically: the worker sees its own pause.
TEST_P(batch_test, a_pause_stops_a_running_batch_at_the_next_callable) {
  if (workers() == 0) GTEST_SKIP() << "a sequential pool cannot be paused";
  weft::pool pool{options()};
  constexpr int n = 200;
  std::atomic<int> ran{0};
  std::atomic<bool> paused{false};
  std::vector<std::function<void()>> batch;
  for (int i = 0; i < n; ++i) {
    batch.emplace_back([&, i] {
      ran.fetch_add(1);
      if (i == 10) {
        pool.pause();
        paused.store(true);
      }
    });
  }
  pool.spawn_all(batch);
  ASSERT_TRUE(weft::test::wait_for(paused));
  if (workers() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
    EXPECT_EQ(ran.load(), 11) << "callables started while the pool was paused";
  }
  pool.resume();
  pool.wait();
  EXPECT_EQ(ran.load(), n);
  EXPECT_EQ(pool.stats().cancelled, 0U);
}

// A purge from inside the batch drops the callables of the batch not yet
// started (it was made before the purge), and counts them cancelled.
TEST_P(batch_test, a_purge_drops_the_rest_of_a_running_batch) {
  weft::pool pool{options()};
  constexpr int n = 200;
  std::atomic<int> ran{0};
  std::vector<std::function<void()>> batch;
  for (int i = 0; i < n; ++i) {
    batch.emplace_back([&, i] {
      ran.fetch_add(1);
      if (i == 10) (void)pool.purge();
    });
  }
  pool.spawn_all(batch);
  pool.wait();
  if (workers() <= 1) {
    EXPECT_EQ(ran.load(), 11);  // one thread runs them in order
  }
  // On more workers the pieces run in any order: the ones before index 10
  // may be dropped too, and the ones after it may all have run already.
  // Either way each callable ran once or was counted dropped.
  EXPECT_EQ(static_cast<std::size_t>(ran.load()) + pool.stats().cancelled, std::size_t{n});
  // A batch made after the purge runs whole.
  pool.spawn_all(std::vector<std::function<void()>>(20, [&ran] { ran.fetch_add(1); }));
  pool.wait();
  EXPECT_EQ(static_cast<std::size_t>(ran.load()) + pool.stats().cancelled, std::size_t{n + 20});
}

// purge() returns how many callables it dropped: a queued batch counts as
// all of its callables, not as the one job that holds them.
TEST_P(batch_test, purge_counts_a_queued_batch_as_its_callables) {
  if (workers() == 0) GTEST_SKIP() << "a sequential pool cannot be paused";
  weft::pool pool{options()};
  std::atomic<int> ran{0};
  pool.pause();
  pool.spawn_all(std::vector<std::function<void()>>(50, [&ran] { ran.fetch_add(1); }));
  const std::size_t dropped = pool.purge();
  // 0 when a worker took the batch's job just as the pool was paused and
  // dropped it itself (control_test's purge tests say why).
  EXPECT_TRUE(dropped == 50 || dropped == 0) << dropped;
  pool.wait();
  EXPECT_EQ(pool.stats().cancelled, 50U);
  pool.resume();
  pool.wait();
  EXPECT_EQ(ran.load(), 0);
}

TEST_P(batch_test, batches_spawned_by_a_batch_all_run) {
  weft::pool pool{options()};
  std::atomic<int> ran{0};
  const int outer = static_cast<int>(weft::test::scaled(200, 40));
  std::vector<std::function<void()>> batch;
  for (int i = 0; i < outer; ++i) {
    batch.emplace_back([&pool, &ran, i] {
      ran.fetch_add(1);
      pool.spawn_all(std::views::iota(0, i % 7) |
                     std::views::transform([&ran](int) { return [&ran] { ran.fetch_add(1); }; }));
    });
  }
  pool.spawn_all(batch);
  pool.wait();
  int expected = outer;
  for (int i = 0; i < outer; ++i) expected += i % 7;
  EXPECT_EQ(ran.load(), expected);
}

INSTANTIATE_TEST_SUITE_P(workers, batch_test, ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
