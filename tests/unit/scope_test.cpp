// weft::submit_scoped, weft::spawn_scoped and weft::scope (LibZ.Jobs'
// finishWith), over 0, 1, 2, 4 and 8 workers.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;

class scope_test : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

using weft::test::error_count;

TEST_P(scope_test, future_is_ready_after_every_attachment) {
  weft::pool pool{options()};
  const std::size_t n = 256;
  std::vector<std::atomic<int>> done(n);
  weft::future<int> f = weft::submit_scoped(pool, [&](weft::scope& s) {
    for (std::size_t i = 0; i < n; ++i) {
      s.spawn([&, i] {
        std::this_thread::sleep_for(1us);
        done[i].store(1, std::memory_order_relaxed);
      });
    }
    return 42;
  });
  EXPECT_EQ(f.get(), 42);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(done[i].load(std::memory_order_relaxed), 1) << i;
}

// Attachments that attach more: a binary split of [0, n) down to single
// elements, n = 100,000 (scaled), all of it before the future is ready.
TEST_P(scope_test, attachments_spawn_attachments) {
  weft::pool pool{options()};
  const std::size_t n = weft::test::scaled(100'000, 1000);
  std::atomic<std::size_t> leaves{0};
  std::atomic<std::size_t> jobs{0};
  struct split {
    std::atomic<std::size_t>* leaves;
    std::atomic<std::size_t>* jobs;
    std::size_t lo;
    std::size_t hi;
    void operator()(weft::scope& s) const {
      jobs->fetch_add(1, std::memory_order_relaxed);
      if (hi - lo == 1) {
        leaves->fetch_add(1, std::memory_order_relaxed);
        return;
      }
      const std::size_t mid = lo + (hi - lo) / 2;
      s.spawn(split{leaves, jobs, lo, mid});
      s.spawn(split{leaves, jobs, mid, hi});
    }
  };
  weft::future<void> f = weft::submit_scoped(pool, split{&leaves, &jobs, 0, n});
  f.get();
  EXPECT_EQ(leaves.load(), n);
  EXPECT_EQ(jobs.load(), 2 * n - 1);
}

// An attachment may capture the scope instead of taking it as a parameter.
TEST_P(scope_test, attachments_may_capture_the_scope) {
  weft::pool pool{options()};
  std::atomic<int> count{0};
  weft::future<void> f = weft::submit_scoped(pool, [&](weft::scope& s) {
    for (int i = 0; i < 10; ++i) {
      s.spawn([&] {
        count.fetch_add(1);
        s.spawn([&] { count.fetch_add(1); });
      });
    }
  });
  f.get();
  EXPECT_EQ(count.load(), 20);
}

// The scoped job does not wait for its attachments: on one worker (or
// sequentially) it returns before any of them runs.
TEST_P(scope_test, the_job_returns_before_its_attachments_run) {
  if (GetParam() > 1) GTEST_SKIP() << "only one thread runs jobs at 0 and 1 workers";
  weft::pool pool{options()};
  std::atomic<bool> returned{false};
  std::atomic<int> after{0};
  weft::future<int> f = weft::submit_scoped(pool, [&](weft::scope& s) {
    for (int i = 0; i < 100; ++i) {
      s.spawn([&] {
        if (returned.load()) after.fetch_add(1);
      });
    }
    returned.store(true);
    return 7;
  });
  EXPECT_EQ(f.get(), 7);
  EXPECT_EQ(after.load(), 100);
}

TEST_P(scope_test, future_not_ready_while_an_attachment_runs) {
  if (GetParam() == 0) GTEST_SKIP() << "a sequential pool runs jobs only in a wait";
  weft::pool pool{options()};
  std::atomic<bool> gate{false};
  std::atomic<bool> started{false};
  weft::future<int> f = weft::submit_scoped(pool, [&](weft::scope& s) {
    s.spawn([&](weft::scope& inner) {
      inner.spawn([&] {
        started.store(true);
        while (!gate.load()) std::this_thread::yield();
      });
    });
    return 1;
  });
  while (!started.load()) std::this_thread::yield();
  std::this_thread::sleep_for(2ms);
  EXPECT_FALSE(f.ready());
  gate.store(true);
  EXPECT_EQ(f.get(), 1);
}

// The first exception of an attachment reaches the future; a later one goes
// to the pool's error path; none is lost.
TEST_P(scope_test, exceptions_from_attachments_reach_the_future) {
  error_count errors;
  weft::pool pool{errors.options(GetParam())};
  const std::size_t rounds = weft::test::scaled(200, 10);
  for (std::size_t round = 0; round < rounds; ++round) {
    std::atomic<int> thrown{0};
    const int before = errors.n.load();
    weft::future<int> f = weft::submit_scoped(pool, [&](weft::scope& s) {
      for (int i = 0; i < 8; ++i) {
        s.spawn([&, i](weft::scope& inner) {
          inner.spawn([&, i] {
            thrown.fetch_add(1);
            throw std::runtime_error("attachment " + std::to_string(i));
          });
        });
      }
      return 5;
    });
    try {
      f.get();
      FAIL() << "the exception was lost, round " << round;
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string{e.what()}.rfind("attachment ", 0), 0U);
    }
    EXPECT_GE(thrown.load(), 1);
    EXPECT_EQ(errors.n.load() - before, thrown.load() - 1) << "round " << round;
  }
}

TEST_P(scope_test, the_jobs_own_exception_reaches_the_future) {
  weft::pool pool{options()};
  std::atomic<int> ran{0};
  weft::future<int> f = weft::submit_scoped(pool, [&](weft::scope& s) -> int {
    s.spawn([&] { ran.fetch_add(1); });
    throw std::logic_error("root");
  });
  EXPECT_THROW(f.get(), std::logic_error);
  EXPECT_LE(ran.load(), 1);
  pool.wait();
}

TEST_P(scope_test, spawn_scoped_sends_exceptions_to_the_pool) {
  weft::pool pool{options()};
  std::atomic<int> count{0};
  weft::spawn_scoped(pool, [&](weft::scope& s) {
    for (int i = 0; i < 100; ++i) s.spawn([&] { count.fetch_add(1); });
  });
  pool.wait();
  EXPECT_EQ(count.load(), 100);
  weft::spawn_scoped(
      pool, [&](weft::scope& s) { s.spawn([] { throw std::runtime_error("detached"); }); });
  EXPECT_THROW(pool.wait(), std::runtime_error);
  pool.wait();  // one exception, rethrown once
}

TEST_P(scope_test, a_dropped_future_sends_its_exception_to_the_pool) {
  weft::pool pool{options()};
  std::atomic<bool> gate{false};
  {
    weft::future<void> f = weft::submit_scoped(pool, [&](weft::scope& s) {
      s.spawn([&] {
        while (GetParam() != 0 && !gate.load()) std::this_thread::yield();
        throw std::runtime_error("dropped");
      });
    });
  }
  gate.store(true);
  EXPECT_THROW(pool.wait(), std::runtime_error);
}

TEST_P(scope_test, spawn_into_a_finished_scope_throws_usage_error) {
  weft::pool pool{options()};
  weft::scope* seen = nullptr;
  weft::future<int> f = weft::submit_scoped(pool, [&](weft::scope& s) {
    seen = &s;
    return 3;
  });
  f.wait();  // ready: the jobs are done, the future still holds the state
  ASSERT_NE(seen, nullptr);
  EXPECT_THROW(seen->spawn([] {}), weft::usage_error);
  EXPECT_EQ(f.get(), 3);
}

TEST_P(scope_test, move_only_results_and_callables) {
  weft::pool pool{options()};
  auto payload = std::make_unique<int>(9);
  weft::future<std::unique_ptr<int>> f =
      weft::submit_scoped(pool, [p = std::move(payload)](weft::scope& s) mutable {
        auto q = std::make_unique<int>(1);
        s.spawn([q = std::move(q)] { EXPECT_EQ(*q, 1); });
        return std::move(p);
      });
  EXPECT_EQ(*f.get(), 9);
}

INSTANTIATE_TEST_SUITE_P(workers, scope_test, ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
