// weft::coro: co_await of a weft::flow_task (docs/coroutines.md, "Awaiting
// a flow task").
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "weft/weft.hpp"

namespace {

using namespace std::chrono_literals;

bool on_a_worker_of(const weft::pool& p) {
  const std::optional<std::size_t> i = weft::this_worker::index();
  return i.has_value() && *i < p.size();
}

TEST(CoroFlow, AwaitResumesAfterTheTaskWithItsEffects) {
  weft::pool p{{.threads = 2}};
  auto root = [&p]() -> weft::coro<int> {
    weft::flow f{p};
    int x = 0;
    int y = 0;
    const weft::flow_task t = f.emplace(
        [](int& v) {
          std::this_thread::sleep_for(5ms);
          v = 40;
        },
        weft::write(x));
    const weft::flow_task u =
        f.emplace([](const int& v, int& w) { w = v + 2; }, weft::read(x), weft::write(y));
    co_await t;
    const int seen_x = x;  // t's write is visible after the await
    co_await u;
    const int seen_y = y;
    const bool on_pool = on_a_worker_of(p);
    f.wait();
    co_return on_pool ? seen_x + seen_y - 40 : -1;
  };
  EXPECT_EQ(weft::sync_wait(p, root()), 42);
}

TEST(CoroFlow, AFinishedTaskDoesNotSuspend) {
  weft::pool p{{.threads = 2}};
  auto root = [&p]() -> weft::coro<int> {
    weft::flow f{p};
    int x = 0;
    const weft::flow_task t = f.emplace([](int& v) { v = 7; }, weft::write(x));
    f.wait();
    co_await t;  // finished before the wait returned: resumes at once
    f.emplace([](int& v) { v += 1; }, weft::write(x));  // may reuse t's node
    f.wait();
    co_await t;  // still finished, whatever its node does now
    co_return x;
  };
  EXPECT_EQ(weft::sync_wait(p, root()), 8);
}

TEST(CoroFlow, TheTasksExceptionReachesTheAwaiterAndStillTheWait) {
  weft::pool p{{.threads = 2}};
  std::atomic<int> rethrown_by_wait{0};
  auto root = [&]() -> weft::coro<int> {
    weft::flow f{p};
    int x = 0;
    const weft::flow_task t = f.emplace(
        [](int&) {
          std::this_thread::sleep_for(2ms);
          throw std::logic_error("flow task");
        },
        weft::write(x));
    int seen = 0;
    try {
      co_await t;
    } catch (const std::logic_error& e) {
      seen = std::string(e.what()) == "flow task" ? 1 : 2;
    }
    try {
      f.wait();
    } catch (const std::logic_error&) {
      ++rethrown_by_wait;
    }
    co_return seen;
  };
  EXPECT_EQ(weft::sync_wait(p, root()), 1);
  EXPECT_EQ(rethrown_by_wait.load(), 1);
}

TEST(CoroFlow, ASkippedTaskThrowsTheEarlierFailure) {
  weft::pool p{{.threads = 2}};
  auto root = [&p]() -> weft::coro<void> {
    weft::flow f{p};
    int x = 0;
    bool ran = false;
    f.emplace([](int&) { throw std::range_error("first"); }, weft::write(x));
    const weft::flow_task later = f.emplace([&ran](int&) { ran = true; }, weft::write(x));
    try {
      co_await later;  // skipped: the flow stopped at the first task
    } catch (...) {
      EXPECT_FALSE(ran);
      EXPECT_THROW(f.wait(), std::range_error);
      throw;
    }
  };
  EXPECT_THROW(weft::sync_wait(p, root()), std::range_error);
}

TEST(CoroFlow, ACancelledFlowThrowsRunCancelled) {
  weft::pool p{{.threads = 2}};
  std::atomic<bool> go{false};
  auto root = [&]() -> weft::coro<void> {
    weft::flow f{p};
    int x = 0;
    f.emplace(
        [&go](int&) {
          while (!go.load()) std::this_thread::sleep_for(1ms);
        },
        weft::write(x));
    const weft::flow_task later = f.emplace([](int& v) { v = 1; }, weft::write(x));
    EXPECT_TRUE(f.cancel());
    go = true;
    try {
      co_await later;
    } catch (const weft::run_cancelled&) {
      EXPECT_EQ(x, 0);
      EXPECT_THROW(f.wait(), weft::run_cancelled);
      throw;
    }
  };
  EXPECT_THROW(weft::sync_wait(p, root()), weft::run_cancelled);
}

TEST(CoroFlow, AnEmptyHandleIsAUsageError) {
  weft::pool p{{.threads = 1}};
  auto root = []() -> weft::coro<void> {
    const weft::flow_task t;
    co_await t;
  };
  EXPECT_THROW(weft::sync_wait(p, root()), weft::usage_error);
}

TEST(CoroFlow, SequentialPoolRunsTheProgramUpToTheTask) {
  weft::pool p{{.threads = 0}};
  auto root = [&p]() -> weft::coro<int> {
    weft::flow f{p};
    std::vector<int> order;
    int a = 0;
    int b = 0;
    f.emplace([&order](int&) { order.push_back(1); }, weft::write(a));
    const weft::flow_task t = f.emplace([&order](int&) { order.push_back(2); }, weft::write(b));
    f.emplace([&order](int&) { order.push_back(3); }, weft::write(a));
    co_await t;
    const bool up_to_t = order == std::vector<int>{1, 2};
    f.wait();
    co_return up_to_t&& order == std::vector<int>{1, 2, 3} ? 1 : 0;
  };
  EXPECT_EQ(weft::sync_wait(p, root()), 1);
}

TEST(CoroFlow, AFlowOfAnotherPoolResumesTheCoroutineOnItsOwn) {
  weft::pool p{{.threads = 2}};
  weft::pool other{{.threads = 1}};
  auto root = [&]() -> weft::coro<bool> {
    weft::flow f{other};
    int x = 0;
    const weft::flow_task t = f.emplace(
        [](int& v) {
          std::this_thread::sleep_for(2ms);
          v = 1;
        },
        weft::write(x));
    co_await t;
    const bool ok = x == 1 && on_a_worker_of(p);
    f.wait();
    co_return ok;
  };
  EXPECT_TRUE(weft::sync_wait(p, root()));
}

// The single worker of p is free while the coroutine waits: the job that
// lets the awaited task (on another pool) finish runs on it.
TEST(CoroFlow, TheAwaitHoldsNoWorker) {
  weft::pool p{{.threads = 1}};
  weft::pool other{{.threads = 1}};
  std::atomic<bool> release{false};
  std::atomic<bool> suspended{false};
  weft::flow f{other};
  int x = 0;
  const weft::flow_task t = f.emplace(
      [&](int& v) {
        while (!release.load()) std::this_thread::sleep_for(1ms);
        v = 5;
      },
      weft::write(x));
  auto root = [&]() -> weft::coro<int> {
    suspended = true;
    co_await t;
    co_return x;
  };
  weft::future<int> r = weft::submit(p, root());
  while (!suspended.load()) std::this_thread::sleep_for(1ms);
  p.submit([&release] { release = true; }).get();
  EXPECT_EQ(r.get(), 5);
  f.wait();
}

TEST(CoroFlow, ManyAwaitsKeepTheFlowConsistent) {
  weft::pool p{{.threads = 2}};
  auto root = [&p]() -> weft::coro<long> {
    weft::flow f{p, {.window = 64}};
    long sum = 0;
    long x = 0;
    for (int i = 1; i <= 500; ++i) {
      const weft::flow_task t = f.emplace([i](long& v) { v += i; }, weft::write(x));
      if (i % 3 == 0) {
        co_await t;
        sum = x;
      }
    }
    f.wait();
    co_return sum + x;
  };
  // The last await is at i = 498: x is 498 * 499 / 2 there, 500 * 501 / 2 at the end.
  EXPECT_EQ(weft::sync_wait(p, root()), 498L * 499 / 2 + 500L * 501 / 2);
}

}  // namespace
