// Many rounds of mixed work with random timing; any lost job, lost wake-up or
// lost exception shows up as a wrong sum, a timeout or a missing throw.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;

class scheduler_stress : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

// A job of the napping-waiter tests: spins for `busy`, then raises `ended`
// (steady_clock ticks) to the moment it stopped, so that `ended` holds the
// end of the round's last job.
void spin_then_stamp(std::chrono::microseconds busy, std::atomic<std::int64_t>& ended) {
  using clock = std::chrono::steady_clock;
  const auto until = clock::now() + busy;
  while (clock::now() < until) {
  }
  const std::int64_t now = clock::now().time_since_epoch().count();
  std::int64_t seen = ended.load();
  while (seen < now && !ended.compare_exchange_weak(seen, now)) {
  }
}

// How long after the end of the round's last job (spin_then_stamp) it is.
std::chrono::steady_clock::duration since(const std::atomic<std::int64_t>& ended) {
  using clock = std::chrono::steady_clock;
  return clock::now() - clock::time_point{clock::duration{ended.load()}};
}

// Runs `rounds` rounds of the napping-waiter tests: each of one job, or
// every other of two, that spin 0-120 us at random (spin_then_stamp). The
// round's jobs are spawned and waited for by round(busy, started, ended),
// after which it waits until one of them has started elsewhere (2 ms at
// most: one no idle worker was offered at once runs in the wait, late 0).
// Returns how late after the round's last job's end its wait returned, at
// worst.
template <class Spawn, class Wait>
std::chrono::steady_clock::duration worst_lateness(std::size_t rounds, std::uint64_t seed,
                                                   Spawn spawn, Wait wait) {
  using clock = std::chrono::steady_clock;
  std::mt19937_64 rng{seed};
  clock::duration late{0};
  for (std::size_t r = 0; r < rounds; ++r) {
    const int jobs = r % 2 == 0 ? 1 : 2;
    std::atomic<int> left{jobs};
    std::atomic<int> started{0};
    std::atomic<std::int64_t> ended{0};
    auto job = [&left, &started, &ended](std::chrono::microseconds busy) {
      return [&left, &started, &ended, busy] {
        started.fetch_add(1);
        spin_then_stamp(busy, ended);
        left.fetch_sub(1);
      };
    };
    for (int i = 0; i < jobs; ++i) spawn(job(std::chrono::microseconds{rng() % 120}));
    const auto give_up = clock::now() + 2ms;
    while (started.load() == 0 && clock::now() < give_up) std::this_thread::yield();
    wait(left);
    late = std::max(late, since(ended));
  }
  return late;
}

void random_pause(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0:
      std::this_thread::yield();
      break;
    case 1:
      std::this_thread::sleep_for(std::chrono::microseconds{rng() % 20});
      break;
    default:
      break;
  }
}

// A random tree of joins, groups, submits and spawns; returns the sum of the
// node ids below `id`, which is the same whatever the interleaving.
std::uint64_t random_tree(weft::pool& pool, std::uint64_t id, int depth, std::uint64_t seed) {
  std::mt19937_64 rng{seed ^ (id * 0x9E3779B97F4A7C15ULL)};
  random_pause(rng);
  if (depth == 0) return id;
  const std::uint64_t left = id * 4 + 1;
  const std::uint64_t right = id * 4 + 2;
  switch (rng() % 4) {
    case 0: {
      auto [a, b] = weft::join([&] { return random_tree(pool, left, depth - 1, seed); },
                               [&] { return random_tree(pool, right, depth - 1, seed); });
      return id + a + b;
    }
    case 1: {
      std::uint64_t a = 0;
      std::uint64_t b = 0;
      weft::task_group g{pool};
      g.spawn([&] { a = random_tree(pool, left, depth - 1, seed); });
      g.spawn([&] { b = random_tree(pool, right, depth - 1, seed); });
      g.wait();
      return id + a + b;
    }
    case 2: {
      auto a = pool.submit([&] { return random_tree(pool, left, depth - 1, seed); });
      const std::uint64_t b = random_tree(pool, right, depth - 1, seed);
      return id + a.get() + b;
    }
    default: {
      std::uint64_t a = 0;
      std::atomic<bool> done{false};
      pool.spawn([&] {
        a = random_tree(pool, left, depth - 1, seed);
        done.store(true, std::memory_order_release);
      });
      const std::uint64_t b = random_tree(pool, right, depth - 1, seed);
      pool.wait_until([&] { return done.load(std::memory_order_acquire); });
      return id + a + b;
    }
  }
}

std::uint64_t expected_tree(std::uint64_t id, int depth) {
  if (depth == 0) return id;
  return id + expected_tree(id * 4 + 1, depth - 1) + expected_tree(id * 4 + 2, depth - 1);
}

TEST_P(scheduler_stress, random_trees_of_every_front_end) {
  weft::pool pool{options()};
  const std::size_t rounds = weft::test::scaled(60, 6);
  for (std::size_t r = 0; r < rounds; ++r) {
    const std::uint64_t seed = 1000 + r;
    SCOPED_TRACE("seed " + std::to_string(seed));
    const int depth = 6 + static_cast<int>(r % 4);
    ASSERT_EQ(pool.submit([&] { return random_tree(pool, 0, depth, seed); }).get(),
              expected_tree(0, depth));
  }
}

TEST_P(scheduler_stress, no_lost_wake_up_at_any_phase_of_idling) {
  // Submit after a random idle time, so the workers are caught spinning,
  // announcing sleep, re-checking or parked. A lost wake-up never finishes.
  weft::pool pool{options()};
  std::mt19937_64 rng{42};
  const std::size_t rounds = weft::test::scaled(3000, 300);
  for (std::size_t r = 0; r < rounds; ++r) {
    std::this_thread::sleep_for(std::chrono::microseconds{rng() % 300});
    std::atomic<bool> ran{false};
    pool.spawn([&] { ran.store(true, std::memory_order_release); });
    if (GetParam() == 0) pool.wait();
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!ran.load(std::memory_order_acquire)) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "lost wake-up in round " << r;
      std::this_thread::yield();
    }
    pool.wait();
  }
}

TEST_P(scheduler_stress, no_lost_wake_up_of_a_napping_joiner) {
  // A stolen half that ends at a random moment around the one its joiner
  // stops yielding and naps (100 us: join.hpp, take_back()): the thief's
  // unpark races the joiner's announcement. The naps are scaled to half a
  // second and more, so a joiner the thief failed to wake returns that late.
  if (GetParam() < 2) GTEST_SKIP() << "needs two workers";
  weft::pool pool{options()};
  const weft::test::backoff_sleep_scaled scaled{10'000};  // 50 us -> 0.5 s
  using clock = std::chrono::steady_clock;
  const std::size_t rounds = weft::test::scaled(400, 40);
  const auto worst = pool.submit([rounds] {
                           std::mt19937_64 rng{7};
                           clock::duration late{0};
                           for (std::size_t r = 0; r < rounds; ++r) {
                             const auto busy = std::chrono::microseconds{rng() % 400};
                             std::atomic<bool> started{false};
                             clock::time_point ended;
                             weft::join(
                                 [&] {
                                   while (!started.load()) std::this_thread::yield();
                                 },
                                 [&] {
                                   started = true;
                                   const auto until = clock::now() + busy;
                                   while (clock::now() < until) {
                                   }
                                   ended = clock::now();
                                 });
                             late = std::max(late, clock::now() - ended);
                           }
                           return late;
                         })
                         .get();
  EXPECT_LT(worst, 250ms);
}

TEST_P(scheduler_stress, no_lost_wake_up_of_a_napping_group_waiter) {
  // A task_group's home waits for jobs other workers run, which end at
  // random moments around the one its wait stops spinning and yielding and
  // naps (the backoff's sleeping phase, some 10-50 us in): each finish races
  // the waiter's announcement, and naps_delayed widens the window before
  // it. Every other round has two jobs, so the first finish wakes the
  // waiter with one job left, and it naps again. The naps are scaled to
  // half a second and more, so a waiter no finish woke returns that late.
  if (GetParam() < 2) GTEST_SKIP() << "needs two workers";
  weft::pool pool{options()};
  const weft::test::backoff_sleep_scaled scaled{10'000};  // 50 us -> 0.5 s
  const weft::test::naps_delayed delayed{20us};  // jobs end before the nap announces itself
  const std::size_t rounds = weft::test::scaled(400, 40);
  const auto worst = pool.submit([&pool, rounds] {
                           // A group per round: spawn into the current one.
                           std::optional<weft::task_group> g;
                           return worst_lateness(
                               rounds, 11,
                               [&](auto job) {
                                 if (!g) g.emplace(pool);
                                 g->spawn(job);
                               },
                               [&](const std::atomic<int>&) {
                                 g->wait();
                                 g.reset();
                               });
                         })
                         .get();
  EXPECT_LT(worst, 250ms);
}

TEST_P(scheduler_stress, no_lost_wake_up_of_threads_blocked_on_one_group) {
  // One to three outside threads wait on one group while its jobs end at
  // random moments around the ones they block, and in some rounds a job
  // spawns one more into the group as it ends, so the count drops to one
  // and rises again while threads are listed. Every thread must return
  // once the group is idle: the group first had one slot for a blocked
  // thread, and the others in it hung. The group is reused across rounds.
  weft::pool pool{options()};
  std::mt19937_64 rng{17};
  const std::size_t rounds = weft::test::scaled(1500, 150);
  auto g = std::make_unique<weft::task_group>(pool);
  for (std::size_t r = 0; r < rounds; ++r) {
    std::atomic<int> ran{0};
    const int jobs = 1 + static_cast<int>(rng() % 2);
    const bool respawn = rng() % 3 == 0;
    for (int i = 0; i < jobs; ++i) {
      const auto busy = std::chrono::microseconds{rng() % 120};
      g->spawn([&ran, &group = *g, busy, respawn] {
        const auto until = std::chrono::steady_clock::now() + busy;
        while (std::chrono::steady_clock::now() < until) {
        }
        if (respawn) group.spawn([&ran] { ran.fetch_add(1); });
        ran.fetch_add(1);
      });
    }
    const std::size_t waiters = 1 + rng() % 3;
    std::vector<std::atomic<bool>> returned(waiters);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < waiters; ++i) {
      threads.emplace_back([&group = *g, flag = &returned[i]] {
        group.wait();
        flag->store(true);
      });
    }
    bool all = true;
    for (const auto& flag : returned) all = weft::test::wait_for(flag) && all;
    if (!all) {
      // A thread that never returns keeps using the group: leak both.
      for (auto& t : threads) t.detach();
      (void)g.release();
      FAIL() << "round " << r << ": a thread blocked in wait() was never woken";
    }
    for (auto& t : threads) t.join();
    ASSERT_EQ(ran.load(), respawn ? 2 * jobs : jobs) << "round " << r;
  }
}

TEST_P(scheduler_stress, no_lost_wake_up_of_a_worker_napping_in_another_pools_wait) {
  // A worker of one pool waits in another pool's wait() for jobs that end
  // at random moments around the one its wait stops spinning and yielding
  // and naps; each end races the napper's announcement (nap_until_idle()),
  // and naps_delayed widens the window before it. Every other round has
  // two jobs on two workers, so the first may wake the napper with one job
  // left. Naps are scaled to half a second and more, so a napper that no
  // end woke returns that late.
  if (GetParam() == 0) GTEST_SKIP() << "needs a worker to wait on";
  weft::pool outer{options()};
  weft::pool inner{{.threads = 2}};
  const weft::test::backoff_sleep_scaled scaled{10'000};  // 50 us -> 0.5 s
  const weft::test::naps_delayed delayed{20us};  // jobs end before the nap announces itself
  const std::size_t rounds = weft::test::scaled(2000, 200);
  const auto worst = outer
                         .submit([&inner, rounds] {
                           return worst_lateness(
                               rounds, 13, [&](auto job) { inner.spawn(job); },
                               [&](const std::atomic<int>&) { inner.wait(); });
                         })
                         .get();
  EXPECT_LT(worst, 250ms);
}

TEST_P(scheduler_stress, no_lost_wake_up_of_a_worker_napping_in_wait_until) {
  // A worker waits in wait_until() until the jobs it spawned, run by other
  // workers, have ended, at random moments around the one the wait stops
  // spinning and yielding and naps; each end races the napper's look at
  // the predicate (pool::finish_nap), and naps_delayed widens the window
  // between the wait's last look and the nap's. Every other round has two
  // jobs, so the first may wake the napper with the predicate still false.
  // Naps are scaled to half a second and more, so a napper that no end
  // woke returns that late.
  if (GetParam() < 2) GTEST_SKIP() << "needs two workers";
  weft::pool pool{options()};
  const weft::test::backoff_sleep_scaled scaled{10'000};  // 50 us -> 0.5 s
  const weft::test::naps_delayed delayed{20us};  // jobs end before the nap announces itself
  const std::size_t rounds = weft::test::scaled(2000, 200);
  const auto worst = pool.submit([&pool, rounds] {
                           return worst_lateness(
                               rounds, 17, [&](auto job) { pool.spawn(job); },
                               [&](const std::atomic<int>& left) {
                                 pool.wait_until([&left] { return left.load() == 0; });
                               });
                         })
                         .get();
  EXPECT_LT(worst, 250ms);
}

TEST_P(scheduler_stress, pools_come_and_go_under_concurrent_submitters) {
  const std::size_t rounds = weft::test::scaled(100, 10);
  for (std::size_t r = 0; r < rounds; ++r) {
    std::atomic<int> ran{0};
    {
      weft::pool pool{options()};
      std::vector<std::thread> submitters;
      for (int t = 0; t < 3; ++t) {
        submitters.emplace_back([&] {
          for (int i = 0; i < 200; ++i) pool.spawn([&] { ran.fetch_add(1); });
        });
      }
      for (auto& s : submitters) s.join();
    }  // the destructor drains everything
    ASSERT_EQ(ran.load(), 600) << "round " << r;
  }
}

TEST_P(scheduler_stress, exceptions_at_random_jobs_are_all_delivered) {
  weft::pool pool{options()};
  std::mt19937_64 rng{7};
  const std::size_t rounds = weft::test::scaled(200, 20);
  for (std::size_t r = 0; r < rounds; ++r) {
    const int jobs = 50;
    const int thrower = static_cast<int>(rng() % jobs);
    std::atomic<int> completed{0};
    weft::task_group g{pool};
    for (int i = 0; i < jobs; ++i) {
      g.spawn([&, i] {
        if (i == thrower) throw std::runtime_error("job failed");
        completed.fetch_add(1);
      });
    }
    EXPECT_THROW(g.wait(), std::runtime_error) << "round " << r;
    EXPECT_LT(completed.load(), jobs);
    // Detached jobs: each failure is rethrown by exactly one wait().
    const int failing = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < failing; ++i) pool.spawn([] { throw std::runtime_error("detached"); });
    int caught = 0;
    for (int i = 0; i < failing + 1; ++i) {
      try {
        pool.wait();
      } catch (const std::runtime_error&) {
        ++caught;
      }
    }
    ASSERT_EQ(caught, failing) << "round " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(workers, scheduler_stress,
                         ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
