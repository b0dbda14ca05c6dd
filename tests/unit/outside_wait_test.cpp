// Waits by threads that are not workers (docs/waiting.md, "Outside waits"):
// pool_options::waiters_help lets such a waiter run the jobs it submitted
// itself; without it every job runs on a worker.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>
#include <weft/detail/visit.hpp>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;

// Worker counts with at least one worker: a sequential pool's waiter runs
// every job anyway.
class outside_wait : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options helping() const {
    return {.threads = GetParam(), .waiters_help = true};
  }
};

// Occupies every worker of `pool` until open() or a deadline; whether the
// deadline was reached tells a test that nobody else ran its jobs.
class gate {
 public:
  void occupy(weft::pool& pool) {
    for (std::size_t i = 0; i < pool.size(); ++i) {
      pool.spawn([this] {
        entered_.fetch_add(1, std::memory_order_acq_rel);
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (!open_.load(std::memory_order_acquire)) {
          if (std::chrono::steady_clock::now() > deadline) {
            timed_out_.store(true, std::memory_order_relaxed);
            return;
          }
          std::this_thread::sleep_for(50us);
        }
      });
    }
    // Every worker holds a blocker, so none can take what comes next.
    while (entered_.load(std::memory_order_acquire) != pool.size()) std::this_thread::yield();
  }
  void open() { open_.store(true, std::memory_order_release); }
  [[nodiscard]] bool timed_out() const { return timed_out_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::size_t> entered_{0};
  std::atomic<bool> open_{false};
  std::atomic<bool> timed_out_{false};
};

TEST_P(outside_wait, get_runs_the_waiters_own_job_while_workers_are_busy) {
  weft::pool pool{helping()};
  gate busy;
  busy.occupy(pool);
  const std::thread::id me = std::this_thread::get_id();
  auto f = pool.submit([me] {
    return std::pair{std::this_thread::get_id() == me, weft::this_worker::index()};
  });
  const auto [on_waiter, index] = f.get();
  busy.open();
  pool.wait();
  EXPECT_TRUE(on_waiter);
  EXPECT_EQ(index, pool.size()) << "a job the waiter runs sees the helper slot";
}

// join in a job that the waiting thread runs as the helper forks into that
// job's pool, not into weft::default_pool().
TEST_P(outside_wait, join_in_a_helper_run_job_uses_the_jobs_pool) {
  weft::pool pool{helping()};
  gate busy;
  busy.occupy(pool);
  const std::thread::id me = std::this_thread::get_id();
  auto f = pool.submit([me, &pool] {
    auto [a, b] = weft::join([] { return 1; },
                             [me, &pool] {
                               // Every worker of `pool` is held, so only its helper (this very
                               // thread) can run g; in weft::default_pool() a worker of that pool
                               // would.
                               const bool here = std::this_thread::get_id() == me;
                               return here && weft::this_worker::index() == pool.size() ? 2 : -100;
                             });
    return std::pair{std::this_thread::get_id() == me, a + b};
  });
  const auto [on_waiter, sum] = f.get();
  busy.open();
  pool.wait();
  EXPECT_TRUE(on_waiter);
  EXPECT_EQ(sum, 3);
  EXPECT_FALSE(busy.timed_out());
}

TEST_P(outside_wait, pool_wait_runs_the_waiters_jobs_and_what_they_spawn) {
  weft::pool pool{helping()};
  gate busy;
  busy.occupy(pool);
  constexpr int roots = 64;
  std::atomic<int> ran{0};
  std::atomic<int> on_waiter{0};
  const std::thread::id me = std::this_thread::get_id();
  for (int i = 0; i < roots; ++i) {
    pool.spawn([&, i] {
      on_waiter.fetch_add(std::this_thread::get_id() == me ? 1 : 0, std::memory_order_relaxed);
      // A child: spawned by a job the waiter runs, it goes to the waiter's
      // lane too, and the waiter runs it as well.
      pool.spawn([&] { ran.fetch_add(1, std::memory_order_relaxed); });
      ran.fetch_add(1, std::memory_order_relaxed);
      // The last root lets the workers go, so that wait() can return.
      if (i == roots - 1) busy.open();
    });
  }
  pool.wait();
  EXPECT_EQ(ran.load(), 2 * roots);
  EXPECT_EQ(on_waiter.load(), roots);
  EXPECT_FALSE(busy.timed_out());
}

TEST_P(outside_wait, task_group_wait_runs_the_waiters_jobs) {
  weft::pool pool{helping()};
  gate busy;
  busy.occupy(pool);
  weft::task_group group{pool};
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) group.spawn([&] { ran.fetch_add(1, std::memory_order_relaxed); });
  group.wait();
  busy.open();
  EXPECT_EQ(ran.load(), 100);
  pool.wait();
  EXPECT_FALSE(busy.timed_out());
}

TEST_P(outside_wait, exceptions_of_jobs_the_waiter_runs_reach_their_futures) {
  weft::pool pool{helping()};
  gate busy;
  busy.occupy(pool);
  auto failing = pool.submit([]() -> int { throw std::runtime_error("job failed"); });
  EXPECT_THROW(failing.get(), std::runtime_error);
  busy.open();
  pool.wait();
  EXPECT_FALSE(busy.timed_out());
}

TEST_P(outside_wait, nested_waits_in_jobs_the_waiter_runs_do_not_overflow_the_stack) {
  weft::pool pool{helping()};
  // Each job submits the next and waits for it: the waiter runs most of the
  // chain on its own stack, up to the help-depth limit, then only waits.
  std::function<int(int)> chain = [&](int n) -> int {
    if (n == 0) return 0;
    return pool.submit([&, n] { return chain(n - 1); }).get() + 1;
  };
  const int length = static_cast<int>(weft::test::scaled(3000, 600));
  EXPECT_EQ(chain(length), length);
}

TEST_P(outside_wait, without_the_option_every_job_runs_on_a_worker) {
  weft::pool pool{{.threads = GetParam()}};
  std::vector<weft::future<std::optional<std::size_t>>> ids;
  for (int i = 0; i < 256; ++i)
    ids.push_back(pool.submit([] { return weft::this_worker::index(); }));
  for (auto& f : ids) EXPECT_TRUE(f.get().has_value());
}

// Random trees of jobs from several outside threads, each waiting in every
// way, while the workers take the same jobs: each job runs exactly once.
TEST_P(outside_wait, helping_waiters_under_random_timing_lose_nothing) {
  const std::size_t rounds = weft::test::scaled(60, 8);
  for (std::size_t round = 0; round < rounds; ++round) {
    weft::pool pool{helping()};
    std::atomic<std::uint64_t> ran{0};
    std::atomic<std::uint64_t> expected{0};
    std::vector<std::thread> outside;
    for (std::uint64_t t = 0; t < 3; ++t) {
      outside.emplace_back([&, t] {
        std::mt19937_64 rng{weft::test::mix(round * 8 + t)};
        for (int i = 0; i < 40; ++i) {
          const int fan = static_cast<int>(rng() % 8);
          expected.fetch_add(static_cast<std::uint64_t>(fan) + 1, std::memory_order_relaxed);
          auto job = [&ran, &pool, fan, spin = rng() % 2000] {
            for (int k = 0; k < fan; ++k) pool.spawn([&ran] { ran.fetch_add(1); });
            for (std::uint64_t s = 0; s < spin; ++s)
              std::atomic_signal_fence(std::memory_order_seq_cst);
            ran.fetch_add(1);
          };
          switch (rng() % 3) {
            case 0:
              pool.submit(job).get();
              break;
            case 1: {
              weft::task_group group{pool};
              group.spawn(job);
              group.wait();
              break;
            }
            default:
              pool.spawn(job);
          }
        }
      });
    }
    for (auto& t : outside) t.join();
    pool.wait();
    ASSERT_EQ(ran.load(), expected.load()) << "round " << round;
  }
}

// A waiter that helps while another thread destroys the pool: the pool's
// destructor waits for the jobs the waiter runs and for the waiter to leave
// them (ASan/TSan check that nothing touches the freed pool).
TEST_P(outside_wait, helping_waiter_racing_the_destructor) {
  const std::size_t rounds = weft::test::scaled(500, 40);
  for (std::size_t round = 0; round < rounds; ++round) {
    auto pool = std::make_unique<weft::pool>(helping());
    weft::pool* p = pool.get();
    std::atomic<int> ran{0};
    // The job runs for a few microseconds, so that get() usually begins
    // before it ends (a wait must begin while the pool exists; once the job
    // has finished, get() does not touch the pool).
    auto f = p->submit([&ran, p, spin = weft::test::mix(round) % 4000] {
      for (int k = 0; k < 4; ++k) p->spawn([&ran] { ran.fetch_add(1); });
      for (std::uint64_t s = 0; s < spin; ++s) std::atomic_signal_fence(std::memory_order_seq_cst);
      return 1;
    });
    std::thread destroyer([&pool, round] {
      if (round % 2 == 0) std::this_thread::yield();
      pool.reset();
    });
    EXPECT_EQ(f.get(), 1);
    destroyer.join();
    EXPECT_EQ(ran.load(), 4);
  }
}

// A get() that saw its job unfinished, racing the destruction of the pool.
// The job waits for a gate; the hook in pool::await (detail::fault) opens it
// at one point of the wait and holds the waiter there.
struct destroy_race {
  static inline std::atomic<bool> gate{false};
  static inline std::atomic<bool> destroyed{false};
  static inline std::atomic<bool> destroyed_while_visiting{false};
  static inline weft::detail::fault::await_point pause_at{};

  static void hook(weft::detail::fault::await_point point) {
    if (point != pause_at) return;
    gate.store(true, std::memory_order_release);
    if (point == weft::detail::fault::await_point::entered) {
      // Not yet visiting: the destructor may finish, and the wait must not
      // touch the pool afterwards (ASan and TSan would see it).
      while (!destroyed.load(std::memory_order_acquire)) std::this_thread::yield();
    } else {
      // Visiting: the destructor must wait for us, however long we stay.
      std::this_thread::sleep_for(20ms);
      destroyed_while_visiting.store(destroyed.load(std::memory_order_acquire));
    }
  }

  static void run(weft::pool_options options, weft::detail::fault::await_point point) {
    gate = false;
    destroyed = false;
    destroyed_while_visiting = false;
    pause_at = point;
    auto pool = std::make_unique<weft::pool>(options);
    auto f = pool->submit([] {
      while (!gate.load(std::memory_order_acquire)) std::this_thread::yield();
      return 7;
    });
    std::thread destroyer([&pool] {
      pool.reset();
      destroyed.store(true, std::memory_order_release);
    });
    weft::detail::fault::await_hook.store(&hook);
    const int got = f.get();
    weft::detail::fault::await_hook.store(nullptr);
    destroyer.join();
    EXPECT_EQ(got, 7);
    EXPECT_FALSE(destroyed_while_visiting.load());
  }
};

TEST_P(outside_wait, a_get_that_saw_its_job_unfinished_never_touches_a_destroyed_pool) {
  for (const bool help : {false, true}) {
    destroy_race::run({.threads = GetParam(), .waiters_help = help},
                      weft::detail::fault::await_point::entered);
  }
}

TEST_P(outside_wait, the_destructor_waits_for_a_get_that_visits_the_pool) {
  for (const bool help : {false, true}) {
    destroy_race::run({.threads = GetParam(), .waiters_help = help},
                      weft::detail::fault::await_point::visiting);
  }
}

// Sequential pools run their jobs on the waiting thread, so each nested get()
// below is a visit of one more pool by the same thread: more than a slot's
// first 8 entries.
TEST(visits, waits_nest_across_any_number_of_pools) {
  std::vector<std::unique_ptr<weft::pool>> pools;
  for (std::size_t i = 0; i < 3 * weft::detail::visit_slot::entries + 1; ++i) {
    pools.push_back(std::make_unique<weft::pool>(weft::pool_options{.threads = 0}));
  }
  std::function<int(std::size_t)> nest = [&](std::size_t i) -> int {
    if (i == pools.size()) return 0;
    return pools[i]->submit([&nest, i] { return nest(i + 1); }).get() + 1;
  };
  EXPECT_EQ(nest(0), static_cast<int>(pools.size()));
  EXPECT_EQ(weft::detail::my_visit_slot().depth, 0U);
  // Nesting within one pool uses one entry, however deep.
  std::function<int(int)> deep = [&](int n) -> int {
    if (n == 0) return static_cast<int>(weft::detail::my_visit_slot().depth);
    return pools[0]->submit([&deep, n] { return deep(n - 1); }).get();
  };
  EXPECT_EQ(deep(100), 1);
  // A pool destroyed while this thread visits others further in is not
  // held up by them.
  nest(0);
  pools.clear();
}

INSTANTIATE_TEST_SUITE_P(workers, outside_wait, ::testing::Values(1, 2, 4, 8),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
