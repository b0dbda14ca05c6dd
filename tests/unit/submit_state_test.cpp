// Futures' states from the job caches (docs/design.md, "Where jobs live"):
// futures that outlive their pool, futures dropped before and after their
// job runs, purged jobs, states too big for a block, and outside threads
// submitting and dropping futures in random order. Over 0, 1, 2 and 4 workers.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <barrier>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

class submit_state : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

// A callable whose future's state is too big for a block: made with new.
struct big_callable {
  std::array<std::uint64_t, 40> words{};
  std::uint64_t operator()() const { return std::accumulate(words.begin(), words.end(), 0ULL); }
};
// And one whose state fits.
struct small_callable {
  int value;
  int operator()() const { return value; }
};
static_assert(
    !weft::detail::fits_state_block<weft::detail::future_job<std::uint64_t, big_callable>>);
static_assert(weft::detail::fits_state_block<weft::detail::future_job<int, small_callable>>);

big_callable big_of(std::uint64_t seed) {
  big_callable c;
  for (std::size_t i = 0; i < c.words.size(); ++i) c.words[i] = seed + i;
  return c;
}
std::uint64_t big_sum(std::uint64_t seed) {
  const std::uint64_t n = big_callable{}.words.size();
  return n * seed + n * (n - 1) / 2;
}

TEST_P(submit_state, futures_outlive_their_pool) {
  constexpr int n = 100;
  std::vector<weft::future<int>> values;
  std::vector<weft::future<int>> failures;
  std::vector<weft::future<std::uint64_t>> bigs;
  std::vector<weft::future<int>> from_jobs;   // states from a worker's cache
  std::vector<weft::future<int>> from_other;  // from another thread's lane
  std::vector<weft::future<int>> batch;       // submit_all's
  std::vector<weft::future<int>> kept_unread;
  {
    weft::pool pool{options()};
    for (int i = 0; i < n; ++i) {
      values.push_back(pool.submit(small_callable{i}));
      failures.push_back(pool.submit([]() -> int { throw std::runtime_error("failed"); }));
      bigs.push_back(pool.submit(big_of(static_cast<std::uint64_t>(i))));
      kept_unread.push_back(pool.submit([i] { return -i; }));
    }
    from_jobs = pool.submit([&pool] {
                      std::vector<weft::future<int>> inner;
                      inner.reserve(n);
                      for (int i = 0; i < n; ++i)
                        inner.push_back(pool.submit([i] { return 2 * i; }));
                      return inner;
                    })
                    .get();
    std::thread other([&] {
      for (int i = 0; i < n; ++i) from_other.push_back(pool.submit([i] { return 3 * i; }));
    });
    other.join();
    std::vector<small_callable> callables;
    callables.reserve(n);
    for (int i = 0; i < n; ++i) callables.push_back(small_callable{4 * i});
    batch = pool.submit_all(callables);
  }  // waits for every job, then frees the pool and its caches
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(values[i].ready());
    EXPECT_EQ(values[i].get(), i);
    EXPECT_THROW(failures[i].get(), std::runtime_error);
    EXPECT_EQ(bigs[i].get(), big_sum(static_cast<std::uint64_t>(i)));
    EXPECT_EQ(from_other[i].get(), 3 * i);
    EXPECT_EQ(batch[i].get(), 4 * i);
  }
  // Half of these are let go here, half by another thread, all unread.
  std::thread dropper([&] {
    for (int i = 0; i < n; i += 2) {
      EXPECT_EQ(from_jobs[i].get(), 2 * i);
      kept_unread[i] = {};
    }
  });
  for (int i = 1; i < n; i += 2) {
    EXPECT_EQ(from_jobs[i].get(), 2 * i);
    kept_unread[i] = {};
  }
  dropper.join();
}

TEST_P(submit_state, futures_dropped_before_their_job_runs) {
  weft::test::error_count errors;
  std::atomic<int> ran{0};
  const int n = static_cast<int>(weft::test::scaled(2000, 200));
  {
    weft::pool pool{errors.options(GetParam())};
    for (int round = 0; round < 3; ++round) {
      // Paused, no job starts before its future is gone (a sequential pool
      // starts none before the wait anyway).
      if (GetParam() != 0) pool.pause();
      for (int i = 0; i < n; ++i) {
        if (i % 10 == 0) {
          (void)pool.submit([&ran]() -> int {
            ran.fetch_add(1, std::memory_order_relaxed);
            throw std::runtime_error("nobody reads this");
          });
        } else if (i % 10 == 1) {
          (void)pool.submit(big_of(1));
          ran.fetch_add(1, std::memory_order_relaxed);
        } else {
          (void)pool.submit([&ran, i] {
            ran.fetch_add(1, std::memory_order_relaxed);
            return i;
          });
        }
      }
      if (GetParam() != 0) pool.resume();
      pool.wait();
    }
  }
  EXPECT_EQ(ran.load(), 3 * n);
  // The dropped futures' exceptions went to the pool's error path.
  EXPECT_EQ(errors.n.load(), 3 * ((n + 9) / 10));
}

TEST_P(submit_state, futures_dropped_after_their_job_runs_and_blocks_are_reused) {
  weft::pool pool{options()};
  const int n = static_cast<int>(weft::test::scaled(3000, 300));
  for (int round = 0; round < 3; ++round) {
    std::vector<weft::future<int>> fs;
    for (int i = 0; i < n; ++i) {
      // A reused block must not keep the last state's value or exception.
      const bool fails = (i + round) % 3 == 0;
      fs.push_back(pool.submit([i, fails]() -> int {
        if (fails) throw std::runtime_error("failed");
        return i;
      }));
    }
    pool.wait();
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(fs[i].ready());
      const bool fails = (i + round) % 3 == 0;
      if (fails) {
        EXPECT_THROW(fs[i].get(), std::runtime_error);
      } else if (i % 2 == 0) {
        EXPECT_EQ(fs[i].get(), i);
      }
      // Else dropped unread below, with a value, which is fine.
    }
  }
}

TEST_P(submit_state, purged_jobs_cancel_their_futures) {
  if (GetParam() == 0) GTEST_SKIP() << "pause() needs workers";
  weft::pool pool{options()};
  pool.pause();
  std::vector<weft::future<int>> fs;
  fs.reserve(64);
  for (int i = 0; i < 64; ++i) fs.push_back(pool.submit(small_callable{i}));
  // Half are let go before the purge: their states go when it drops them.
  for (int i = 0; i < 64; i += 2) fs[i] = {};
  // A worker taking a job just as the pool paused drops it itself: counted
  // in stats, not in purge()'s return (docs/control.md).
  EXPECT_LE(pool.purge(), 64U);
  pool.resume();
  for (int i = 1; i < 64; i += 2) EXPECT_THROW(fs[i].get(), weft::job_cancelled);
  EXPECT_EQ(pool.submit(small_callable{7}).get(), 7);
  pool.wait();
  EXPECT_EQ(pool.stats().cancelled, 64U);
}

INSTANTIATE_TEST_SUITE_P(workers, submit_state, ::testing::Values(0, 1, 2, 4),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

// Outside threads submit, read and drop futures in random order, hand some
// to each other to drop, and keep some past the pool's destruction.
TEST(submit_state_stress, outside_threads_submit_and_drop_futures_in_random_order) {
  constexpr std::size_t threads = 4;
  const std::size_t steps = weft::test::scaled(300000, 20000);
  auto pool = std::make_unique<weft::pool>(weft::pool_options{.threads = 2});
  // One slot per thread: a future another thread left there to let go.
  std::array<std::atomic<weft::future<int>*>, threads> handed{};
  std::barrier pool_gone{static_cast<std::ptrdiff_t>(threads + 1)};
  std::atomic<long> wrong{0};
  std::vector<std::thread> outside;
  for (std::size_t t = 0; t < threads; ++t) {
    outside.emplace_back([&, t] {
      std::uint64_t rng = weft::test::mix(t + 1);
      auto next = [&rng](std::uint64_t bound) {
        rng = weft::test::mix(rng);
        return rng % bound;
      };
      struct held {
        weft::future<int> f;
        int expected;
      };
      std::vector<held> mine;
      auto take_handed = [&] {
        // Acquire pairs with the release exchange below: the future moved
        // into the slot is complete.
        delete handed[t].exchange(nullptr, std::memory_order_acquire);
      };
      for (std::size_t step = 0; step < steps; ++step) {
        const std::uint64_t action = next(8);
        if (action < 3 || mine.empty()) {
          const int v = static_cast<int>(next(1000));
          if (next(4) == 0) {
            // A state from a worker's cache, let go of by this thread.
            weft::future<weft::future<int>> outer =
                pool->submit([&p = *pool, v] { return p.submit([v] { return v + 1; }); });
            mine.push_back({outer.get(), v + 1});
          } else {
            mine.push_back({pool->submit(small_callable{v}), v});
          }
        } else {
          const std::size_t i = next(mine.size());
          held h = std::move(mine[i]);
          mine[i] = std::move(mine.back());
          mine.pop_back();
          if (action < 5) {
            if (h.f.get() != h.expected) wrong.fetch_add(1);
          } else if (action == 5) {
            // To another thread, which lets go of it unread. Release pairs
            // with the acquire exchange in take_handed().
            auto* moved = new weft::future<int>(std::move(h.f));
            delete handed[next(threads)].exchange(moved, std::memory_order_acq_rel);
          }
          // Else dropped here, unread, ready or not.
        }
        if (step % 64 == 0) take_handed();
      }
      pool_gone.arrive_and_wait();  // the pool is destroyed meanwhile
      pool_gone.arrive_and_wait();
      // Whatever is left outlived the pool: read some, drop the rest.
      while (!mine.empty()) {
        const std::size_t i = next(mine.size());
        if (next(2) == 0 && mine[i].f.get() != mine[i].expected) wrong.fetch_add(1);
        mine[i] = std::move(mine.back());
        mine.pop_back();
      }
      take_handed();
    });
  }
  pool_gone.arrive_and_wait();
  pool.reset();
  pool_gone.arrive_and_wait();
  for (auto& th : outside) th.join();
  for (auto& slot : handed) delete slot.exchange(nullptr);
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
