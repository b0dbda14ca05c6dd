// Where a coro's frame goes and who hands on after it finishes:
//  - CoroJoinArgs: what weft::join() returns holds the children until the
//    co_await that joins them; a join that throws before suspending (an
//    empty child, a cancelled start) frees every child's frame, and an
//    lvalue join is awaited as the rvalue one is.
//  - CoroForeign: coroutines resumed by foreign awaitables
//    (docs/coroutines.md, "Frames"): on a thread that is no job of weft's,
//    a finishing coroutine hands on by symmetric transfer and its awaiter
//    frees its frame; resumed inline inside another coroutine's body, its
//    hand-overs run once that body returns to the job that drives it.
//    Results, exceptions and frames are right either way.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

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

// Resumes the awaiting coroutine on a new std::thread of its own.
class thread_bag {
 public:
  thread_bag() = default;
  thread_bag(const thread_bag&) = delete;
  thread_bag& operator=(const thread_bag&) = delete;
  ~thread_bag() { join(); }

  struct awaiter {
    thread_bag& bag;
    [[nodiscard]] bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      const std::lock_guard<std::mutex> lock{bag.m_};
      bag.threads_.emplace_back([h] { h.resume(); });
    }
    void await_resume() const noexcept {}
  };
  awaiter hop() noexcept { return awaiter{*this}; }

  void join() {
    for (;;) {
      std::thread t;
      {
        const std::lock_guard<std::mutex> lock{m_};
        if (threads_.empty()) return;
        t = std::move(threads_.back());
        threads_.pop_back();
      }
      t.join();
    }
  }

 private:
  std::mutex m_;
  std::vector<std::thread> threads_;
};

weft::coro<int> value(counted /*frame_marker*/, int v) { co_return v; }
weft::coro<int> thrower(counted /*frame_marker*/) {
  throw std::runtime_error("thrown");
  co_return 0;
}
weft::coro<int> hopping(counted /*frame_marker*/, thread_bag& bag, int v) {
  co_await bag.hop();
  co_return v;
}

// A one-shot event whose set() resumes its waiter inline, on the caller.
struct inline_event {
  std::coroutine_handle<> waiter;
  struct awaiter {
    inline_event& e;
    [[nodiscard]] bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) noexcept { e.waiter = h; }
    void await_resume() const noexcept {}
  };
  awaiter wait() noexcept { return awaiter{*this}; }
  void set() { std::exchange(waiter, nullptr).resume(); }
};

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

TEST(CoroForeign, AwaitsAndJoinsOnAForeignThreadGiveResultsAndFreeFrames) {
  std::atomic<int> gone{0};
  const int made = 6;  // the frames of value x3, hopping x2, thrower
  {
    thread_bag bag;
    weft::pool p{{.threads = 2}};
    auto root = [&]() -> weft::coro<int> {
      co_await bag.hop();  // from here on a thread of the bag's
      const int a = co_await value(counted{gone}, 1);
      auto [b, c] = co_await weft::join(value(counted{gone}, 2), value(counted{gone}, 3));
      // Children that go on on threads of their own: each finishes with no
      // drive and hands on (chained: this thread is no worker).
      auto [d, e] =
          co_await weft::join(hopping(counted{gone}, bag, 4), hopping(counted{gone}, bag, 5));
      int f = 0;
      try {
        (void)co_await thrower(counted{gone});
      } catch (const std::runtime_error&) {
        f = 6;
      }
      co_return a + b + c + d + e + f;
    };
    EXPECT_EQ(weft::sync_wait(p, root()), 21);
    p.wait();
    bag.join();
  }
  EXPECT_EQ(gone.load(), made);
}

TEST(CoroForeign, AnInlineResumptionInsideAnotherCoroutinesBodyHandsOnAfterIt) {
  std::atomic<int> gone{0};
  weft::pool p{{.threads = 0}};  // in submission order, on this thread
  inline_event ev;
  std::atomic<bool> b_went_on{false};
  auto a = [&]() -> weft::coro<int> {
    co_await ev.wait();
    // Resumed inside b's body: these children finish under b's job.
    auto [x, y] = co_await weft::join(value(counted{gone}, 10), value(counted{gone}, 20));
    const int z = co_await value(counted{gone}, 30);
    co_return x + y + z;
  };
  auto b = [&]() -> weft::coro<int> {
    ev.set();
    b_went_on = true;
    const int w = co_await value(counted{gone}, 7);
    co_return w;
  };
  weft::future<int> fa = weft::submit(p, a());
  EXPECT_EQ(weft::sync_wait(p, b()), 7);
  EXPECT_TRUE(b_went_on.load());
  EXPECT_EQ(fa.get(), 60);
  p.wait();
  EXPECT_EQ(gone.load(), 4);
}
