// weft::coro resumed by foreign awaitables (docs/coroutines.md, "Frames"):
// on a thread that is no job of weft's, a finishing coroutine hands on by
// symmetric transfer and its awaiter frees its frame; resumed inline inside
// another coroutine's body, its hand-overs run once that body returns to
// the job that drives it. Results, exceptions and frames are right either
// way.
#include <gtest/gtest.h>

#include <atomic>
#include <coroutine>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "weft/weft.hpp"

namespace {

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

// Counts the destructions of its copies: a frame holds one as a parameter.
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
