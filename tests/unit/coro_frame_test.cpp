// weft::coro's per-thread frame cache (detail/coro_frame.hpp) at a thread's
// start and end: each thread has its own, made on its first frame and given
// back to the heap when the thread ends (on Windows from the heap object of
// platform::per_thread, since MinGW frees its emulated TLS first); a frame
// freed after that goes to the heap. Leaks show under LeakSanitizer (asan).
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "weft/weft.hpp"

namespace {

using frames = weft::detail::coro_frames;

weft::coro<std::uint64_t> fib(int n) {
  if (n < 2) co_return static_cast<std::uint64_t>(n);
  auto [a, b] = co_await weft::join(fib(n - 1), fib(n - 2));
  co_return a + b;
}

TEST(CoroFrames, EachThreadHasItsOwnCacheAndGivesItBackAtItsEnd) {
  // Threads one after another, each caching frames of several classes: a
  // new thread starts with none of the last one's.
  for (int t = 0; t < 8; ++t) {
    std::size_t at_start = 1;
    std::size_t kept = 0;
    std::thread{[&] {
      at_start = frames::cached();
      std::vector<void*> held;
      for (std::size_t size = 1; size <= frames::granule * frames::classes; size += 40) {
        held.push_back(frames::allocate(size));
      }
      std::size_t size = 1;
      for (void* p : held) {
        frames::release(p, size);
        size += 40;
      }
      kept = frames::cached();
    }}.join();
    EXPECT_EQ(at_start, 0U) << "thread " << t;
    EXPECT_EQ(kept, (frames::granule * frames::classes - 1) / 40 + 1) << "thread " << t;
  }
}

TEST(CoroFrames, CoroutinesOnThreadsThatEndRunAndCacheTheirFrames) {
  weft::pool p{{.threads = 0}};
  for (int t = 0; t < 4; ++t) {
    std::uint64_t result = 0;
    std::size_t kept = 0;
    std::thread{[&] {
      result = weft::sync_wait(p, fib(12));
      kept = frames::cached();
    }}.join();
    EXPECT_EQ(result, 144U);
    EXPECT_GT(kept, 0U);
  }
}

// What a thread's last frame free saw: how many frames its thread kept
// right after (-1 before it ran).
std::atomic<long> kept_after_late_free{-1};

// Frees its frame when the thread ends, after the thread's frame cache is
// gone if it was constructed before that cache (thread_locals are destroyed
// in reverse order of construction).
struct late_frame {
  void* frame = nullptr;
  ~late_frame() {
    if (frame == nullptr) return;
    frames::release(frame, frames::granule);
    kept_after_late_free.store(static_cast<long>(frames::cached()));
  }
};

TEST(CoroFrames, AFrameFreedAfterTheThreadsCacheIsGoneGoesToTheHeap) {
#ifdef __MINGW32__
  // A thread_local with a destructor is itself unusable there.
  GTEST_SKIP() << "MinGW-w64 frees a thread_local before its destructor runs (docs/platforms.md)";
#else
  kept_after_late_free.store(-1);
  std::thread{[] {
    thread_local late_frame late;
    late.frame = frames::allocate(frames::granule);  // makes the cache, after `late`
    EXPECT_EQ(frames::cached(), 0U);
  }}.join();
  // Into a cache that is gone, nothing would free it (and LeakSanitizer
  // would report it in the asan build).
  EXPECT_EQ(kept_after_late_free.load(), 0);
#endif
}

}  // namespace
