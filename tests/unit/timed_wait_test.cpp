// Timed waits (future::wait_for/wait_until, pool::wait_for) and arguments
// bound by spawn(f, args...) and submit(f, args...): what Taskflow's and
// BS::thread_pool's users expect (issue 8).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/clock_cases.hpp"
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
// Saturating conversions (issue 41, defect 3): a timeout or deadline of any
// rep, period and clock is converted without overflow. Too far ahead to
// represent (max(), +infinity) waits until the job finishes, the past
// (min(), -infinity) only looks, NaN is a usage_error. Under UBSan (the
// asan preset) an overflow on the way aborts the test.

using namespace weft::test::clock_cases;
using thirds = std::chrono::duration<std::int64_t, std::ratio<1, 3>>;
using unsigned_hours = std::chrono::duration<std::uint64_t, std::ratio<3600>>;
using long_double_seconds = std::chrono::duration<long double>;
constexpr long double most_long_double = std::numeric_limits<long double>::max();

// Sets `flag` once `after` has passed, or at once when destroyed: a bound
// that only keeps a failing wait from hanging.
class releaser {
 public:
  releaser(std::atomic<bool>& flag, std::chrono::milliseconds after)
      : thread_([this, &flag, after] {
          {
            std::unique_lock lock{mutex_};
            cv_.wait_for(lock, after, [this] { return stop_; });
          }
          flag.store(true, std::memory_order_release);
        }) {}
  releaser(const releaser&) = delete;
  releaser& operator=(const releaser&) = delete;
  ~releaser() {
    {
      const std::lock_guard lock{mutex_};
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest is there
};

struct timed_result {
  std::future_status status;
  steady::duration took;
};

// Submits a job that waits for a flag, set `after` from now (or as soon as
// wait() is back), and returns what wait(future) said and how long it took.
template <class W>
timed_result wait_on_a_blocked_job(weft::pool& pool, std::chrono::milliseconds after, W wait) {
  std::atomic<bool> release{false};
  weft::future<void> f = pool.submit([&release] { await_flag(release); });
  timed_result r{};
  const auto before = steady::now();
  {
    const releaser bound{release, after};
    r.status = wait(f);
    r.took = steady::now() - before;
  }
  f.get();
  return r;
}

using wait_call = std::function<std::future_status(const weft::future<void>&)>;
struct named_wait {
  const char* name;
  wait_call wait;
};

TEST_P(timed_wait, a_deadline_too_far_ahead_on_any_clock_waits_for_the_job) {
  weft::pool pool{options()};
  const std::vector<named_wait> waits = {
      // Another clock's max(): its distance from now overflowed, and the
      // wait returned timeout at once.
      {"until system_clock seconds max",
       [](const auto& f) { return f.wait_until(sys_at<std::chrono::seconds>::max()); }},
      {"until system_clock hours max",
       [](const auto& f) { return f.wait_until(sys_at<std::chrono::hours>::max()); }},
      {"until system_clock max",
       [](const auto& f) { return f.wait_until(sys_clock::time_point::max()); }},
      {"until system_clock +inf",
       [](const auto& f) { return f.wait_until(sys_at<fsec>(fsec(infinity))); }},
      {"until system_clock 1e300 s",
       [](const auto& f) { return f.wait_until(sys_at<fsec>(fsec(1e300))); }},
      {"until steady max", [](const auto& f) { return f.wait_until(steady::time_point::max()); }},
      {"until steady hours max",
       [](const auto& f) { return f.wait_until(steady_at<std::chrono::hours>::max()); }},
      {"until steady +inf",
       [](const auto& f) { return f.wait_until(steady_at<fsec>(fsec(infinity))); }},
      {"for +inf", [](const auto& f) { return f.wait_for(fsec(infinity)); }},
      {"for seconds max", [](const auto& f) { return f.wait_for(std::chrono::seconds::max()); }},
      {"for unsigned hours max", [](const auto& f) { return f.wait_for(unsigned_hours::max()); }},
      {"for thirds max", [](const auto& f) { return f.wait_for(thirds::max()); }},
      {"for long double max",
       [](const auto& f) { return f.wait_for(long_double_seconds(most_long_double)); }},
  };
  for (const named_wait& w : waits) {
    const timed_result r = wait_on_a_blocked_job(pool, 20ms, w.wait);
    EXPECT_EQ(r.status, std::future_status::ready) << w.name;
    EXPECT_GE(r.took, 20ms) << w.name << ": returned before the job finished";
  }
}

TEST_P(timed_wait, a_past_deadline_on_any_clock_only_looks) {
  weft::pool pool{options()};
  const std::vector<named_wait> waits = {
      // Another clock's min(): its distance from now overflowed, and the
      // wait never timed out.
      {"until system_clock min",
       [](const auto& f) { return f.wait_until(sys_clock::time_point::min()); }},
      {"until system_clock seconds min",
       [](const auto& f) { return f.wait_until(sys_at<std::chrono::seconds>::min()); }},
      {"until system_clock -inf",
       [](const auto& f) { return f.wait_until(sys_at<fsec>(fsec(-infinity))); }},
      {"until system_clock a century ago",
       [](const auto& f) {
         return f.wait_until(sys_clock::now() - std::chrono::hours(24 * 365 * 100));
       }},
      {"until steady min", [](const auto& f) { return f.wait_until(steady::time_point::min()); }},
      {"until steady seconds min",
       [](const auto& f) { return f.wait_until(steady_at<std::chrono::seconds>::min()); }},
      {"until steady -inf",
       [](const auto& f) { return f.wait_until(steady_at<fsec>(fsec(-infinity))); }},
      {"for -inf", [](const auto& f) { return f.wait_for(fsec(-infinity)); }},
      {"for seconds min", [](const auto& f) { return f.wait_for(std::chrono::seconds::min()); }},
      {"for thirds min", [](const auto& f) { return f.wait_for(thirds::min()); }},
  };
  for (const named_wait& w : waits) {
    const timed_result r = wait_on_a_blocked_job(pool, 2000ms, w.wait);
    EXPECT_EQ(r.status, std::future_status::timeout) << w.name;
    EXPECT_LT(r.took, 1s) << w.name << ": did not return at once";
  }
}

TEST_P(timed_wait, a_nan_timeout_or_deadline_is_a_usage_error) {
  weft::pool pool{options()};
  std::atomic<bool> release{false};
  weft::future<void> f = pool.submit([&release] { await_flag(release); });
  const auto nan_float =
      std::chrono::duration<float, std::milli>(std::numeric_limits<float>::quiet_NaN());
  expect_nan_error([&] { (void)f.wait_for(fsec(not_a_number)); }, "weft::future::wait_for");
  expect_nan_error([&] { (void)f.wait_for(nan_float); }, "weft::future::wait_for");
  expect_nan_error([&] { (void)f.wait_until(sys_at<fsec>(fsec(not_a_number))); },
                   "weft::future::wait_until");
  expect_nan_error([&] { (void)f.wait_until(steady_at<fsec>(fsec(not_a_number))); },
                   "weft::future::wait_until");
  expect_nan_error([&] { (void)pool.wait_for(fsec(not_a_number)); }, "weft::pool::wait_for");
  release.store(true, std::memory_order_release);
  f.get();
  // The same once the job has finished: the timeout is looked at first.
  weft::future<int> done = pool.submit([] { return 1; });
  done.wait();
  expect_nan_error([&] { (void)done.wait_for(fsec(not_a_number)); }, "weft::future::wait_for");
  expect_nan_error([&] { (void)pool.wait_for(fsec(not_a_number)); }, "weft::pool::wait_for");
  EXPECT_EQ(done.get(), 1);
}

TEST_P(timed_wait, pool_wait_for_a_timeout_too_long_to_represent_is_wait) {
  weft::pool pool{options()};
  auto check = [&](auto timeout, const char* name) {
    std::atomic<bool> release{false};
    pool.spawn([&release] { await_flag(release); });
    const auto before = steady::now();
    bool idle = false;
    {
      const releaser bound{release, 20ms};
      idle = pool.wait_for(timeout);
    }
    EXPECT_TRUE(idle) << name;
    EXPECT_GE(steady::now() - before, 20ms) << name << ": returned before the job finished";
  };
  check(fsec(infinity), "+inf");
  check(std::chrono::seconds::max(), "seconds max");
  check(unsigned_hours::max(), "unsigned hours max");
  check(thirds::max(), "thirds max");
  check(long_double_seconds(most_long_double), "long double max");
  if (!sequential()) {  // a sequential pool's wait would run the blocked job
    std::atomic<bool> release{false};
    pool.spawn([&release] { await_flag(release); });
    const auto before = steady::now();
    {
      const releaser bound{release, 2000ms};
      EXPECT_FALSE(pool.wait_for(fsec(-infinity)));
      EXPECT_FALSE(pool.wait_for(std::chrono::seconds::min()));
      EXPECT_FALSE(pool.wait_for(thirds::min()));
      EXPECT_LT(steady::now() - before, 1s) << "did not return at once";
    }
    pool.wait();
  }
}

TEST_P(timed_wait, graph_run_futures_convert_deadlines_the_same_way) {
  weft::pool pool{options()};
  std::atomic<bool> release{false};
  weft::graph g;
  g.emplace([&] { await_flag(release); });
  {
    auto run = pool.run(g);
    const auto before = steady::now();
    {
      const releaser bound{release, 20ms};
      EXPECT_EQ(run.wait_until(sys_at<std::chrono::seconds>::max()), std::future_status::ready);
    }
    EXPECT_GE(steady::now() - before, 20ms);
    run.get();
  }
  release.store(false);
  {
    auto run = pool.run(g);
    const auto before = steady::now();
    {
      const releaser bound{release, 2000ms};
      EXPECT_EQ(run.wait_until(sys_clock::time_point::min()), std::future_status::timeout);
      EXPECT_LT(steady::now() - before, 1s);
      expect_nan_error([&] { (void)run.wait_for(fsec(not_a_number)); }, "weft::future::wait_for");
    }
    run.get();
  }
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
