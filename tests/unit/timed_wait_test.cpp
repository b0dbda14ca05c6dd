// Timed waits (future::wait_for/wait_until, pool::wait_for) and arguments
// bound by spawn(f, args...) and submit(f, args...): what Taskflow's and
// BS::thread_pool's users expect (issue 8).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;

class timed_wait : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
  [[nodiscard]] bool sequential() const { return GetParam() == 0; }
};

void await_flag(const std::atomic<bool>& flag) {
  while (!flag.load(std::memory_order_acquire)) std::this_thread::yield();
}

TEST_P(timed_wait, future_wait_for_times_out_then_reports_ready) {
  if (sequential()) GTEST_SKIP() << "a sequential pool's waiter runs the blocked job itself";
  weft::pool pool{options()};
  std::atomic<bool> release{false};
  auto f = pool.submit([&] {
    await_flag(release);
    return 42;
  });
  const auto before = std::chrono::steady_clock::now();
  EXPECT_EQ(f.wait_for(20ms), std::future_status::timeout);
  EXPECT_GE(std::chrono::steady_clock::now() - before, 20ms);
  EXPECT_EQ(f.wait_until(std::chrono::system_clock::now() + 5ms), std::future_status::timeout);
  EXPECT_EQ(f.wait_for(0s), std::future_status::timeout);
  EXPECT_EQ(f.wait_for(-5s), std::future_status::timeout);
  // Many timed waits on one latch reuse one waiter (ASan sees a leak or a
  // use after free otherwise).
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(f.wait_for(1us), std::future_status::timeout);
  release.store(true, std::memory_order_release);
  EXPECT_EQ(f.wait_for(std::chrono::hours::max()), std::future_status::ready);
  EXPECT_EQ(f.wait_for(0s), std::future_status::ready);
  EXPECT_EQ(f.get(), 42);
}

TEST_P(timed_wait, a_timed_wait_is_woken_when_the_job_finishes) {
  weft::pool pool{options()};
  auto f = pool.submit([] {
    std::this_thread::sleep_for(5ms);
    return 7;
  });
  const auto before = std::chrono::steady_clock::now();
  EXPECT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - before, 5s);
  EXPECT_EQ(f.get(), 7);
}

TEST_P(timed_wait, timed_waits_on_several_futures_in_turn) {
  weft::pool pool{options()};
  std::atomic<bool> release{false};
  std::vector<weft::future<int>> futures;
  for (int i = 0; i < 12; ++i) {
    futures.push_back(pool.submit([&release, i] {
      if (i % 2 == 0) await_flag(release);
      return i;
    }));
  }
  if (!sequential()) {
    for (int round = 0; round < 50; ++round) {
      for (int i = 0; i < 12; i += 2) {
        EXPECT_EQ(futures[static_cast<std::size_t>(i)].wait_for(10us), std::future_status::timeout);
      }
    }
  }
  release.store(true, std::memory_order_release);
  for (int i = 0; i < 12; ++i) {
    auto& f = futures[static_cast<std::size_t>(i)];
    while (f.wait_for(1ms) != std::future_status::ready) {
    }
    EXPECT_EQ(f.get(), i);
  }
}

TEST_P(timed_wait, a_job_waits_with_a_timeout_for_another_job) {
  weft::pool pool{options()};
  std::atomic<bool> release{false};
  auto blocked = std::make_shared<weft::future<int>>();
  auto outer = pool.submit([&] {
    *blocked = pool.submit([&] {
      await_flag(release);
      return 1;
    });
    // On a worker the wait runs jobs meanwhile, newest first from its own
    // deque: usually the blocked job itself, which then ends only when the
    // thread below releases it, so the wait returns late, but ready.
    return blocked->wait_for(5ms);
  });
  std::thread releaser([&] {
    std::this_thread::sleep_for(20ms);
    release.store(true, std::memory_order_release);
  });
  const auto status = outer.get();
  releaser.join();
  EXPECT_TRUE(status == std::future_status::timeout || status == std::future_status::ready);
  EXPECT_EQ(blocked->get(), 1);
}

// A worker whose future's job runs on another worker, long: once it has
// nothing to run it naps on the future's latch, and the job's end wakes it
// (docs/waiting.md, "A worker's wait that finds nothing to run"); a timed
// wait's nap ends at its deadline. The backoff's pauses are scaled to
// seconds, so a wait that slept them out would return about a second late.
TEST_P(timed_wait, a_worker_waiting_for_a_long_job_elsewhere_wakes_when_it_ends) {
  if (GetParam() < 2) GTEST_SKIP() << "needs two workers";
  weft::pool pool{options()};
  const weft::test::backoff_sleep_scaled scaled{10'000};  // 50 us -> 0.5 s
  using clock = std::chrono::steady_clock;
  struct outcome {
    bool elsewhere = false;
    std::future_status early = std::future_status::deferred;
    clock::duration early_took{};
    clock::duration late{};
  };
  const outcome o = pool.submit([&pool] {
                          outcome r;
                          std::atomic<bool> started{false};
                          clock::time_point ended;
                          auto long_job = pool.submit([&] {
                            started.store(true, std::memory_order_release);
                            std::this_thread::sleep_for(600ms);
                            ended = clock::now();
                          });
                          // Another worker took it (a job runs once started).
                          const auto give_up = clock::now() + 10s;
                          while (!started.load(std::memory_order_acquire) && clock::now() < give_up)
                            std::this_thread::yield();
                          r.elsewhere = started.load(std::memory_order_acquire);
                          const auto before = clock::now();
                          r.early = long_job.wait_for(100ms);
                          r.early_took = clock::now() - before;
                          long_job.get();
                          r.late = clock::now() - ended;
                          return r;
                        })
                        .get();
  ASSERT_TRUE(o.elsewhere) << "no other worker took the job";
  EXPECT_EQ(o.early, std::future_status::timeout);
  EXPECT_LT(o.early_took, 400ms);
  EXPECT_LT(o.late, 300ms);
}

TEST_P(timed_wait, graph_run_futures_wait_with_a_timeout) {
  if (sequential()) GTEST_SKIP() << "a sequential pool's waiter runs the blocked task itself";
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<bool> release{false};
  g.emplace([&] { await_flag(release); });
  auto run = pool.run(g);
  EXPECT_EQ(run.wait_for(10ms), std::future_status::timeout);
  release.store(true, std::memory_order_release);
  EXPECT_EQ(run.wait_for(10s), std::future_status::ready);
  run.get();
}

TEST_P(timed_wait, an_empty_future_is_a_usage_error) {
  weft::future<int> f;
  EXPECT_THROW((void)f.wait_for(1ms), weft::usage_error);
  EXPECT_THROW((void)f.wait_until(std::chrono::steady_clock::now()), weft::usage_error);
}

TEST_P(timed_wait, pool_wait_for_says_whether_the_pool_became_idle) {
  weft::pool pool{options()};
  std::atomic<bool> release{false};
  std::atomic<int> ran{0};
  pool.spawn([&] {
    if (!sequential()) await_flag(release);
    ran.fetch_add(1);
  });
  if (!sequential()) {
    EXPECT_FALSE(pool.wait_for(20ms));
    EXPECT_EQ(ran.load(), 0);
    release.store(true, std::memory_order_release);
  }
  EXPECT_TRUE(pool.wait_for(10s));
  EXPECT_EQ(ran.load(), 1);
  // An exception a detached job left is rethrown once the pool is idle.
  pool.spawn([] { throw std::runtime_error("late"); });
  EXPECT_THROW((void)pool.wait_for(10s), std::runtime_error);
  EXPECT_TRUE(pool.wait_for(0s));  // nothing left
}

TEST_P(timed_wait, pool_wait_for_from_its_own_job_is_a_usage_error) {
  weft::pool pool{options()};
  auto f = pool.submit([&] { return pool.wait_for(1ms); });
  EXPECT_THROW((void)f.get(), weft::usage_error);
}

TEST_P(timed_wait, timed_out_pool_waits_lose_no_job) {
  weft::pool pool{options()};
  std::atomic<int> ran{0};
  const int jobs = static_cast<int>(weft::test::scaled(20000, 2000));
  for (int i = 0; i < jobs; ++i) {
    pool.spawn([&] { ran.fetch_add(1, std::memory_order_relaxed); });
    if (i % 1000 == 0) (void)pool.wait_for(1us);
  }
  while (!pool.wait_for(1ms)) {
  }
  EXPECT_EQ(ran.load(), jobs);
  pool.wait();
}

// ---------------------------------------------------------------------------
// spawn(f, args...) and submit(f, args...)

TEST_P(timed_wait, submit_and_spawn_bind_arguments_like_std_async) {
  weft::pool pool{options()};
  auto sum = pool.submit([](int a, int b) { return a + b; }, 2, 40);
  EXPECT_EQ(sum.get(), 42);

  // Copied when called: a later change to the original is not seen.
  std::string text = "weft";
  auto length = pool.submit([](const std::string& s) { return s.size(); }, text);
  text.clear();
  EXPECT_EQ(length.get(), 4U);

  // std::ref passes a reference.
  int counter = 0;
  pool.spawn([](int& c, int by) { c += by; }, std::ref(counter), 5);
  pool.wait();
  EXPECT_EQ(counter, 5);

  // Move-only arguments are moved in, and into the call.
  auto owned = std::make_unique<int>(9);
  auto taken = pool.submit([](std::unique_ptr<int> p) { return *p; }, std::move(owned));
  EXPECT_EQ(taken.get(), 9);

  // A member function with its object, as std::invoke does.
  struct counter_box {
    int value = 1;
    [[nodiscard]] int times(int k) const { return value * k; }
  } box;
  auto product = pool.submit(&counter_box::times, std::cref(box), 6);
  EXPECT_EQ(product.get(), 6);

  // Exceptions reach the future as for any job.
  auto failing =
      pool.submit([](int v) -> int { throw std::invalid_argument(std::to_string(v)); }, 3);
  EXPECT_THROW(failing.get(), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(workers, timed_wait, ::testing::Values(0, 1, 2, 4, 8),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
