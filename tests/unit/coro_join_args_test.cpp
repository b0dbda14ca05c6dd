// co_await weft::join(coros...): what weft::join() returns holds the
// children until the co_await that joins them; a join that throws before
// suspending (an empty child, a cancelled start) frees every child's frame,
// and an lvalue join is awaited as the rvalue one is.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>
#include <tuple>
#include <utility>

#include "weft/weft.hpp"

namespace {

// A parameter that counts its copies' destructions: a coroutine's frame
// holds one, destroyed with the frame.
struct counted {
  std::atomic<int>* gone;
  explicit counted(std::atomic<int>& g) noexcept : gone(&g) {}
  counted(const counted&) = default;
  counted(counted&& o) noexcept : gone(std::exchange(o.gone, nullptr)) {}
  counted& operator=(const counted&) = delete;
  counted& operator=(counted&&) = delete;
  ~counted() {
    if (gone != nullptr) ++*gone;
  }
};

weft::coro<int> child(counted /*frame_marker*/, int v) { co_return v; }

}  // namespace

TEST(CoroJoinArgs, AnEmptyChildThrowsAtTheAwaitAndFreesTheOthers) {
  weft::pool p{{.threads = 2}};
  std::atomic<int> gone{0};
  auto root = [&]() -> weft::coro<int> {
    weft::coro<int> empty;
    auto [a, b] = co_await weft::join(child(counted{gone}, 1), std::move(empty));
    co_return a + b;
  };
  EXPECT_THROW((void)weft::sync_wait(p, root()), weft::usage_error);
  EXPECT_EQ(gone.load(), 1);  // the valid child's frame, never started
}

TEST(CoroJoinArgs, ACancelledStartFreesTheChildrenItNeverStarted) {
  weft::pool p{{.threads = 2}};
  std::atomic<int> gone{0};
  std::atomic<bool> started{false};
  auto root = [&]() -> weft::coro<int> {
    started = true;
    // Suspended here when the test cancels: the join's co_await, the next
    // cancellation point, throws before starting its children.
    co_await weft::sleep_for(std::chrono::milliseconds{300});
    auto [a, b] = co_await weft::join(child(counted{gone}, 1), child(counted{gone}, 2));
    co_return a + b;
  };
  weft::future<int> f = weft::submit(p, root());
  while (!started.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds{20});  // into the sleep
  EXPECT_TRUE(f.cancel());
  EXPECT_THROW((void)f.get(), weft::job_cancelled);
  EXPECT_EQ(gone.load(), 2);  // both children made, never started, freed
}

TEST(CoroJoinArgs, AnLvalueJoinIsAwaitedOnceAndFreesItsChildrenAfter) {
  weft::pool p{{.threads = 2}};
  std::atomic<int> gone{0};
  auto root = [&]() -> weft::coro<int> {
    auto j = weft::join(child(counted{gone}, 20), child(counted{gone}, 22));
    auto [a, b] = co_await j;
    // The children have finished; their frames go with j.
    bool again_threw = false;
    try {
      (void)co_await j;
    } catch (const weft::usage_error&) {
      again_threw = true;
    }
    co_return again_threw ? a + b : -1;
  };
  EXPECT_EQ(weft::sync_wait(p, root()), 42);
  EXPECT_EQ(gone.load(), 2);
}

TEST(CoroJoinArgs, TenChildrenJoinOnWorkersAndSequentially) {
  for (const std::size_t threads : {std::size_t{0}, std::size_t{2}}) {
    weft::pool p{{.threads = threads}};
    std::atomic<int> gone{0};
    auto root = [&]() -> weft::coro<int> {
      auto [a0, a1, a2, a3, a4, a5, a6, a7, a8, a9] = co_await weft::join(
          child(counted{gone}, 0), child(counted{gone}, 1), child(counted{gone}, 2),
          child(counted{gone}, 3), child(counted{gone}, 4), child(counted{gone}, 5),
          child(counted{gone}, 6), child(counted{gone}, 7), child(counted{gone}, 8),
          child(counted{gone}, 9));
      co_return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9;
    };
    EXPECT_EQ(weft::sync_wait(p, root()), 45) << threads;
    EXPECT_EQ(gone.load(), 10) << threads;
  }
}
