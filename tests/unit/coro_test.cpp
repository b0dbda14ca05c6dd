// weft::coro: starts, awaits, join, futures, timers, cancellation.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <variant>
#include <vector>

#include "weft/weft.hpp"

namespace {

using namespace std::chrono_literals;

weft::coro<std::uint64_t> fib(int n) {
  if (n < 2) co_return static_cast<std::uint64_t>(n);
  auto [a, b] = co_await weft::join(fib(n - 1), fib(n - 2));
  co_return a + b;
}

std::uint64_t fib_plain(int n) {
  return n < 2 ? static_cast<std::uint64_t>(n) : fib_plain(n - 1) + fib_plain(n - 2);
}

weft::coro<int> value(int v) { co_return v; }
weft::coro<void> nothing() { co_return; }
weft::coro<int> thrower(std::string what) {
  throw std::runtime_error(what);
  co_return 0;
}

weft::coro<int> add_awaited(int a, int b) {
  const int x = co_await value(a);
  const int y = co_await value(b);
  co_return x + y;
}

TEST(Coro, SyncWaitReturnsTheValue) {
  weft::pool p{{.threads = 2}};
  EXPECT_EQ(weft::sync_wait(p, add_awaited(2, 3)), 5);
  weft::sync_wait(p, nothing());
}

TEST(Coro, SubmitGivesAFuture) {
  weft::pool p{{.threads = 2}};
  weft::future<int> f = weft::submit(p, add_awaited(4, 5));
  EXPECT_EQ(f.get(), 9);
}

TEST(Coro, FibWithJoinOnWorkers) {
  weft::pool p{{.threads = 2}};
  EXPECT_EQ(weft::sync_wait(p, fib(20)), fib_plain(20));
}

TEST(Coro, FibWithJoinSequential) {
  weft::pool p{{.threads = 0}};
  EXPECT_EQ(weft::sync_wait(p, fib(15)), fib_plain(15));
}

TEST(Coro, SequentialModeIsDeterministic) {
  auto trace = [] {
    weft::pool p{{.threads = 0}};
    std::vector<int> order;
    auto leaf = [&order](int i) -> weft::coro<void> {
      order.push_back(i);
      co_return;
    };
    auto root = [&]() -> weft::coro<void> {
      co_await weft::join(leaf(1), leaf(2), leaf(3));
      order.push_back(4);
    };
    weft::sync_wait(p, root());
    return order;
  };
  const std::vector<int> first = trace();
  EXPECT_EQ(first.size(), 4U);
  EXPECT_EQ(first.back(), 4);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(trace(), first);
}

TEST(Coro, ExceptionReachesTheFuture) {
  weft::pool p{{.threads = 2}};
  weft::future<int> f = weft::submit(p, thrower("submitted"));
  EXPECT_THROW(f.get(), std::runtime_error);
  EXPECT_THROW(weft::sync_wait(p, thrower("waited")), std::runtime_error);
}

TEST(Coro, ExceptionOfAnAwaitedChildReachesTheParent) {
  weft::pool p{{.threads = 2}};
  auto parent = []() -> weft::coro<std::string> {
    try {
      co_await thrower("child");
    } catch (const std::runtime_error& e) {
      co_return std::string("caught ") + e.what();
    }
    co_return "not thrown";
  };
  EXPECT_EQ(weft::sync_wait(p, parent()), "caught child");
}

TEST(Coro, SpawnedExceptionReachesWait) {
  weft::pool p{{.threads = 2}};
  weft::spawn(p, thrower("spawned"));
  EXPECT_THROW(p.wait(), std::runtime_error);
}

TEST(Coro, SpawnedExceptionReachesOnError) {
  std::atomic<int> errors{0};
  {
    weft::pool p{{.threads = 2, .on_error = [&errors](std::exception_ptr) { ++errors; }}};
    weft::spawn(p, thrower("spawned"));
    p.wait();
  }
  EXPECT_EQ(errors.load(), 1);
}

TEST(Coro, JoinOfThreeWithAThrowingOne) {
  weft::pool p{{.threads = 2}};
  std::atomic<int> finished{0};
  auto slow = [&finished](int v) -> weft::coro<int> {
    co_await weft::sleep_for(5ms);
    ++finished;
    co_return v;
  };
  auto root = [&]() -> weft::coro<int> {
    auto [a, b, c] = co_await weft::join(slow(1), thrower("second"), slow(3));
    co_return a + b + c;
  };
  try {
    (void)weft::sync_wait(p, root());
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "second");
  }
  EXPECT_EQ(finished.load(), 2);  // both others finished before the rethrow
}

TEST(Coro, JoinRethrowsTheFirstChildsException) {
  weft::pool p{{.threads = 2}};
  auto root = []() -> weft::coro<void> {
    co_await weft::join(value(1), thrower("first"), thrower("third"));
  };
  try {
    weft::sync_wait(p, root());
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "first");
  }
}

TEST(Coro, JoinOfVoidGivesMonostate) {
  weft::pool p{{.threads = 2}};
  auto root = []() -> weft::coro<int> {
    auto [a, b] = co_await weft::join(nothing(), value(7));
    static_assert(std::is_same_v<decltype(a), std::monostate>);
    co_return b;
  };
  EXPECT_EQ(weft::sync_wait(p, root()), 7);
}

TEST(Coro, CallableJoinStillWorks) {
  weft::pool p{{.threads = 2}};
  auto r = p.submit([] { return weft::join([] { return 1; }, [] { return 2; }); }).get();
  EXPECT_EQ(r.first + r.second, 3);
}

TEST(Coro, AwaitsAFuture) {
  weft::pool p{{.threads = 2}};
  auto root = [&p]() -> weft::coro<int> {
    weft::future<int> f = p.submit([] {
      std::this_thread::sleep_for(2ms);
      return 40;
    });
    const int a = co_await f;
    const int b = co_await p.submit([] { return 2; });
    co_return a + b;
  };
  EXPECT_EQ(weft::sync_wait(p, root()), 42);
}

TEST(Coro, AwaitsAFutureOfAnotherPoolAndResumesOnItsOwn) {
  weft::pool p{{.threads = 2}};
  weft::pool other{{.threads = 1}};
  auto root = [&]() -> weft::coro<bool> {
    co_await other.submit([] { std::this_thread::sleep_for(2ms); });
    co_return weft::this_worker::index().has_value() && *weft::this_worker::index() < p.size();
  };
  EXPECT_TRUE(weft::sync_wait(p, root()));
}

TEST(Coro, AwaitedFutureExceptionIsRethrown) {
  weft::pool p{{.threads = 2}};
  auto root = [&p]() -> weft::coro<int> {
    co_return co_await p.submit([]() -> int { throw std::logic_error("job"); });
  };
  EXPECT_THROW((void)weft::sync_wait(p, root()), std::logic_error);
}

TEST(Coro, EmptyFutureIsAUsageError) {
  weft::pool p{{.threads = 1}};
  auto root = []() -> weft::coro<void> {
    weft::future<int> f;
    (void)co_await f;
  };
  EXPECT_THROW(weft::sync_wait(p, root()), weft::usage_error);
}

TEST(Coro, SleepForResumesOnAWorkerAfterTheDelay) {
  weft::pool p{{.threads = 2}};
  auto root = [&p]() -> weft::coro<bool> {
    const auto began = std::chrono::steady_clock::now();
    co_await weft::sleep_for(10ms);
    const bool late_enough = std::chrono::steady_clock::now() - began >= 10ms;
    const std::optional<std::size_t> i = weft::this_worker::index();
    co_return late_enough&& i.has_value() && *i < p.size();
  };
  EXPECT_TRUE(weft::sync_wait(p, root()));
}

TEST(Coro, SleepUntilAPastTimeDoesNotSuspend) {
  weft::pool p{{.threads = 1}};
  auto root = []() -> weft::coro<int> {
    co_await weft::sleep_until(std::chrono::steady_clock::now() - 1s);
    co_return 1;
  };
  EXPECT_EQ(weft::sync_wait(p, root()), 1);
}

TEST(Coro, SleepInSequentialMode) {
  weft::pool p{{.threads = 0}};
  auto root = []() -> weft::coro<int> {
    co_await weft::sleep_for(2ms);
    co_return 3;
  };
  EXPECT_EQ(weft::sync_wait(p, root()), 3);
}

TEST(Coro, WaitWaitsForACoroutineSuspendedOnATimer) {
  weft::pool p{{.threads = 2}};
  std::atomic<bool> done{false};
  auto root = [&done]() -> weft::coro<void> {
    co_await weft::sleep_for(20ms);
    done = true;
  };
  weft::spawn(p, root());
  p.wait();
  EXPECT_TRUE(done.load());
}

TEST(Coro, ManySuspendedOnTimers) {
  weft::pool p{{.threads = 2}};
  std::atomic<int> done{0};
  auto sleeper = [&done](int i) -> weft::coro<void> {
    co_await weft::sleep_for(std::chrono::milliseconds(5 + i % 10));
    ++done;
  };
  for (int i = 0; i < 1000; ++i) weft::spawn(p, sleeper(i));
  p.wait();
  EXPECT_EQ(done.load(), 1000);
}

TEST(Coro, DestructorCancelsASleepForever) {
  std::atomic<int> cancelled{0};
  {
    weft::pool p{{.threads = 1, .on_error = [&cancelled](std::exception_ptr e) {
                    try {
                      std::rethrow_exception(e);
                    } catch (const weft::job_cancelled&) {
                      ++cancelled;
                    } catch (...) {
                    }
                  }}};
    auto root = []() -> weft::coro<void> { co_await weft::sleep_for(std::chrono::hours(1)); };
    weft::spawn(p, root());
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(cancelled.load(), 1);
}

TEST(Coro, IndexIsRightAfterEveryResumption) {
  weft::pool p{{.threads = 2}};
  auto root = [&p]() -> weft::coro<bool> {
    bool ok = true;
    for (int i = 0; i < 20; ++i) {
      co_await weft::join(value(i), nothing());
      ok = ok && weft::this_worker::index().has_value() && *weft::this_worker::index() < p.size();
      co_await p.submit([] {});
      ok = ok && weft::this_worker::index().has_value() && *weft::this_worker::index() < p.size();
    }
    co_return ok;
  };
  EXPECT_TRUE(weft::sync_wait(p, root()));
}

TEST(Coro, CancelStopsAtTheNextAwait) {
  weft::pool p{{.threads = 2}};
  std::atomic<int> passes{0};
  std::atomic<bool> go{false};
  auto root = [&]() -> weft::coro<void> {
    for (;;) {
      ++passes;
      co_await weft::sleep_for(1ms);
      if (go) co_await weft::sleep_for(1ms);
    }
  };
  weft::future<void> f = weft::submit(p, root());
  while (passes.load() < 3) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(f.cancel());
  go = true;
  EXPECT_THROW(f.get(), weft::job_cancelled);
  EXPECT_FALSE(f.valid());
}

TEST(Coro, DroppedFutureOfASuspendedCoroutineFreesEverything) {
  weft::pool p{{.threads = 2}};
  auto child = []() -> weft::coro<std::vector<int>> {
    co_await weft::sleep_for(5ms);
    co_return std::vector<int>(1000, 1);
  };
  auto root = [&]() -> weft::coro<std::size_t> {
    auto [a, b] = co_await weft::join(child(), child());
    co_return a.size() + b.size();
  };
  { (void)weft::submit(p, root()); }
  p.wait();  // LeakSanitizer checks the frames and the vectors are gone
}

TEST(Coro, UnstartedCoroFreesItsFrame) {
  weft::coro<int> c = value(1);
  EXPECT_TRUE(c.valid());
  weft::coro<int> d = std::move(c);
  EXPECT_FALSE(c.valid());  // NOLINT(bugprone-use-after-move): checks the moved-from state
  EXPECT_TRUE(d.valid());
}

TEST(Coro, EmptyCoroIsAUsageError) {
  weft::pool p{{.threads = 1}};
  weft::coro<int> c;
  EXPECT_THROW((void)weft::submit(p, std::move(c)), weft::usage_error);
  auto root = []() -> weft::coro<int> {
    weft::coro<int> empty;
    co_return co_await std::move(empty);
  };
  EXPECT_THROW((void)weft::sync_wait(p, root()), weft::usage_error);
}

// Symmetric transfer is a tail call when the compiler makes it one: GCC does
// at -O2, not at the sanitizer presets' -O1 with ASan or TSan, where every
// transfer keeps a native frame (docs/coroutines.md, "Frames"). The depths
// below are the in an optimised build, and small enough for a
// worker's stack under the sanitizers.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr std::uint64_t sequential_awaits = 2'000;
constexpr std::uint64_t nested_awaits = 1'000;
#else
constexpr std::uint64_t sequential_awaits = 1'000'000;
constexpr std::uint64_t nested_awaits = 100'000;
#endif

weft::coro<std::uint64_t> chain_step() { co_return 1; }
weft::coro<std::uint64_t> long_loop(std::uint64_t n) {
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < n; ++i) sum += co_await chain_step();
  co_return sum;
}

TEST(Coro, AMillionSequentialAwaitsDoNotGrowTheStack) {
  weft::pool p{{.threads = 1}};
  EXPECT_EQ(weft::sync_wait(p, long_loop(sequential_awaits)), sequential_awaits);
}

weft::coro<std::uint64_t> deep(std::uint64_t n) {
  if (n == 0) co_return 0;
  co_return 1 + co_await deep(n - 1);
}

TEST(Coro, ADeepChainOfAwaitsRunsInBoundedStack) {
  // 10^5 nested frames live at once (memory grows with the depth, the
  // thread's stack does not: a worker's stack would overflow at a few
  // thousand nested calls of this size without symmetric transfer).
  weft::pool p{{.threads = 1}};
  EXPECT_EQ(weft::sync_wait(p, deep(nested_awaits)), nested_awaits);
}

TEST(Coro, SyncWaitFromInsideAJob) {
  weft::pool p{{.threads = 2}};
  auto f = p.submit([&p] { return weft::sync_wait(p, fib(12)); });
  EXPECT_EQ(f.get(), fib_plain(12));
}

TEST(Coro, FramesAreCached) {
  weft::pool p{{.threads = 0}};
  (void)weft::sync_wait(p, fib(10));
  EXPECT_GT(weft::detail::coro_frames::cached(), 0U);
}

}  // namespace
