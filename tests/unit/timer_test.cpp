// Timers (issue 10): pool.spawn_after, spawn_at and spawn_every, and the
// weft::timer handle. No test asserts how late a timer is (the benchmark
// measures that); they assert that no timer fires early, the order of
// deadlines, exactly-once runs against cancel(), and that a pending timer
// costs no CPU. Every test runs with 0 (sequential), 1, 2, 4 and 8 workers.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/clock_cases.hpp"
#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using namespace weft::test::clock_cases;

class timer_test : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
  [[nodiscard]] bool sequential() const { return GetParam() == 0; }
};

// Waits until pred() holds by running the pool's jobs where that is the
// only way (a sequential pool runs its fired timers on a thread that waits).
template <class P>
void wait_for(weft::pool& pool, P pred) {
  pool.wait_until(pred);
}

// Waits until pred() holds without running any job on this thread where
// the workers run them (wait_until would make the calling thread the pool's
// helper: a second thread running jobs).
template <class P>
void wait_without_helping(weft::pool& pool, P pred) {
  if (pool.size() == 0) {
    pool.wait_until(pred);
    return;
  }
  while (!pred()) std::this_thread::sleep_for(100us);
}

// Counts live copies of itself: whether a callable (and what it captured)
// has been destroyed.
struct tracked {
  std::atomic<int>* alive;
  explicit tracked(std::atomic<int>& a) : alive(&a) { alive->fetch_add(1); }
  tracked(const tracked& o) : alive(o.alive) { alive->fetch_add(1); }
  tracked& operator=(const tracked&) = delete;
  ~tracked() { alive->fetch_sub(1); }
};

std::chrono::nanoseconds process_cpu() { return weft::test::process_cpu_time(); }

TEST_P(timer_test, spawn_after_runs_once_and_never_early) {
  weft::pool pool{options()};
  std::atomic<int> runs{0};
  clock_type::time_point started{};
  const auto before = clock_type::now();
  weft::timer t = pool.spawn_after(20ms, [&] {
    started = clock_type::now();
    runs.fetch_add(1);
  });
  EXPECT_TRUE(t.valid());
  wait_for(pool, [&] { return runs.load() == 1; });
  pool.wait();
  EXPECT_GE(started - before, 20ms);
  EXPECT_FALSE(t.pending());
  EXPECT_FALSE(t.cancel()) << "its run had started";
  std::this_thread::sleep_for(10ms);
  pool.wait();
  EXPECT_EQ(runs.load(), 1);
}

TEST_P(timer_test, deadlines_fire_in_order_and_ties_in_creation_order) {
  weft::pool pool{options()};
  std::mutex m;
  std::vector<int> order;  // guarded by m
  std::atomic<int> violations{0};
  // 300 ms ahead: all 12 must be made before the first deadline, or one
  // made late is overdue and fires after those made before it.
  const auto base = clock_type::now() + 300ms;
  auto add = [&](int id, clock_type::time_point when) {
    pool.spawn_at(when, [&, id, when] {
      if (clock_type::now() < when) violations.fetch_add(1);
      const std::lock_guard lock{m};
      order.push_back(id);
    });
  };
  // Made latest first, so that the order is the heap's, not the creation's.
  for (int i = 7; i >= 0; --i) add(i, base + i * 4ms);
  // Four more at one deadline, after id 7's: they fire in creation order.
  for (int i = 8; i < 12; ++i) add(i, base + 40ms);
  wait_without_helping(pool, [&] {
    const std::lock_guard lock{m};
    return order.size() == 12;
  });
  pool.wait();
  EXPECT_EQ(violations.load(), 0) << "a timer fired before its deadline";
  const std::lock_guard lock{m};
  if (GetParam() <= 1) {
    // One thread (the worker, or the waiter of a sequential pool) runs the
    // jobs in the order they were handed over.
    std::vector<int> expected(12);
    for (int i = 0; i < 12; ++i) expected[static_cast<std::size_t>(i)] = i;
    EXPECT_EQ(order, expected);
  } else {
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < 12; ++i) EXPECT_EQ(sorted[static_cast<std::size_t>(i)], i);
  }
}

TEST_P(timer_test, spawn_at_takes_any_clock_and_the_past) {
  weft::pool pool{options()};
  std::atomic<int> runs{0};
  const auto before = clock_type::now();
  clock_type::time_point steady_ran{};
  pool.spawn_at(clock_type::now() + 15ms, [&] {
    steady_ran = clock_type::now();
    runs.fetch_add(1);
  });
  pool.spawn_at(std::chrono::system_clock::now() + 5ms, [&] { runs.fetch_add(1); });
  pool.spawn_at(clock_type::now() - 1h, [&] { runs.fetch_add(1); });
  pool.spawn_at(clock_type::time_point::min(), [&] { runs.fetch_add(1); });
  pool.spawn_after(-5s, [&] { runs.fetch_add(1); });
  pool.spawn_after(0s, [&] { runs.fetch_add(1); });
  pool.spawn_after(std::chrono::duration<double>(0.002), [&] { runs.fetch_add(1); });
  wait_for(pool, [&] { return runs.load() == 7; });
  pool.wait();
  EXPECT_GE(steady_ran - before, 15ms);
  // Too far to represent: never, and no overflow on the way.
  weft::timer never = pool.spawn_at(clock_type::time_point::max(), [&] { runs.fetch_add(100); });
  weft::timer never2 = pool.spawn_after(std::chrono::hours::max(), [&] { runs.fetch_add(100); });
  weft::timer never3 =
      pool.spawn_at(std::chrono::time_point<clock_type, std::chrono::hours>::max(), [] {});
  std::this_thread::sleep_for(5ms);
  pool.wait();
  EXPECT_TRUE(never.pending());
  EXPECT_TRUE(never.cancel());
  EXPECT_TRUE(never2.cancel());
  EXPECT_TRUE(never3.cancel());
  EXPECT_EQ(runs.load(), 7);
}

TEST_P(timer_test, cancel_before_the_deadline_means_never) {
  weft::pool pool{options()};
  std::atomic<int> runs{0};
  std::atomic<int> alive{0};
  // Far enough ahead that it does not fire before cancel() on a slow machine.
  weft::timer t = pool.spawn_after(300ms, [&, keep = tracked{alive}] { runs.fetch_add(1); });
  EXPECT_EQ(alive.load(), 1);
  EXPECT_TRUE(t.pending());
  EXPECT_TRUE(t.cancel());
  EXPECT_EQ(alive.load(), 0) << "cancel() took it out of the queue and destroyed the callable";
  EXPECT_FALSE(t.pending());
  EXPECT_FALSE(t.cancel()) << "idempotent";
  EXPECT_FALSE(t.cancel());
  std::this_thread::sleep_for(350ms);
  pool.wait();
  EXPECT_EQ(runs.load(), 0);
}

TEST_P(timer_test, cancellation_racing_with_firing_runs_exactly_one_way) {
  // Threads arm timers of 0-300 us and cancel each after a spin of 0-300
  // us, so that cancels land before, during and after the firing: for
  // each, either cancel() returned true and it never ran, or it ran once
  // and cancel() returned false. After every cancel() and a pool.wait(),
  // every callable has been destroyed.
  weft::pool pool{options()};
  const std::size_t n = weft::test::scaled(4000, 500);
  constexpr std::size_t threads_count = 2;
  std::vector<std::atomic<int>> ran(n);
  std::vector<char> cancelled(n, 0);
  std::vector<weft::timer> timers(n);
  std::atomic<int> alive{0};
  std::vector<std::thread> threads;
  for (std::size_t c = 0; c < threads_count; ++c) {
    threads.emplace_back([&, c] {
      std::mt19937 rng{static_cast<unsigned>(c + 7)};
      for (std::size_t i = c; i < n; i += threads_count) {
        const auto delay = std::chrono::microseconds{rng() % 300};
        timers[i] =
            pool.spawn_after(delay, [&ran, i, keep = tracked{alive}] { ran[i].fetch_add(1); });
        const auto until = clock_type::now() + std::chrono::microseconds{rng() % 300};
        while (clock_type::now() < until) {
        }
        cancelled[i] = timers[i].cancel() ? 1 : 0;
      }
    });
  }
  for (auto& t : threads) t.join();
  pool.wait();
  EXPECT_EQ(alive.load(), 0) << "a callable outlived cancel() and pool.wait()";
  std::size_t ran_count = 0;
  std::size_t cancelled_count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(ran[i].load() + cancelled[i], 1) << "timer " << i;
    ran_count += static_cast<std::size_t>(ran[i].load());
    cancelled_count += static_cast<std::size_t>(cancelled[i]);
    EXPECT_FALSE(timers[i].pending());
  }
  EXPECT_GT(cancelled_count, 0U);
  // A sequential pool runs its fired timers only in the wait at the end,
  // after every cancel(): all of them may have been cancelled.
  if (!sequential()) {
    EXPECT_GT(ran_count, 0U);
  }
  // Nothing more runs later.
  std::this_thread::sleep_for(5ms);
  pool.wait();
  std::size_t later = 0;
  for (std::size_t i = 0; i < n; ++i) later += static_cast<std::size_t>(ran[i].load());
  EXPECT_EQ(later, ran_count);
}

TEST_P(timer_test, a_run_cancels_its_own_timer) {
  weft::pool pool{options()};
  // Periodic, through the timer& it may take: no deadlock, no further run.
  std::atomic<int> ticks{0};
  std::atomic<bool> cancel_result{false};
  weft::timer every = pool.spawn_every(1ms, [&](weft::timer& self) {
    if (ticks.fetch_add(1) + 1 == 3) cancel_result = self.cancel();
  });
  wait_for(pool, [&] { return ticks.load() >= 3; });
  pool.wait();
  std::this_thread::sleep_for(20ms);
  pool.wait();
  EXPECT_EQ(ticks.load(), 3);
  EXPECT_TRUE(cancel_result.load());
  EXPECT_FALSE(every.pending());
  EXPECT_FALSE(every.cancel());
  // One-shot: its run has started, so cancel() returns false, and returns.
  std::atomic<int> once{0};
  std::atomic<int> once_result{-1};
  pool.spawn_after(1ms, [&](weft::timer& self) {
    once_result = self.cancel() ? 1 : 0;
    once.fetch_add(1);
  });
  wait_for(pool, [&] { return once.load() == 1; });
  pool.wait();
  EXPECT_EQ(once_result.load(), 0);
}

TEST_P(timer_test, cancelling_a_periodic_timer_from_outside_stops_it) {
  weft::pool pool{options()};
  std::atomic<int> ticks{0};
  std::atomic<int> alive{0};
  weft::timer t = pool.spawn_every(500us, [&ticks, keep = tracked{alive}] { ticks.fetch_add(1); });
  wait_for(pool, [&] { return ticks.load() >= 3; });
  EXPECT_TRUE(t.pending());
  EXPECT_TRUE(t.cancel());
  pool.wait();  // a run that had started has finished
  EXPECT_EQ(alive.load(), 0);
  const int seen = ticks.load();
  std::this_thread::sleep_for(20ms);
  pool.wait();
  EXPECT_EQ(ticks.load(), seen);
  EXPECT_FALSE(t.pending());
  EXPECT_FALSE(t.cancel());
}

TEST_P(timer_test, periodic_runs_never_overlap_and_skip_missed_ticks) {
  weft::pool pool{options()};
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::atomic<int> ticks{0};
  int plain = 0;  // not atomic: runs must be ordered one after the other (TSan)
  clock_type::time_point first{};
  clock_type::time_point last{};
  const auto made = clock_type::now();
  weft::timer t = pool.spawn_every(2ms, [&] {
    if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
    const auto now = clock_type::now();
    if (plain == 0) first = now;
    last = now;
    ++plain;
    if (plain == 1) std::this_thread::sleep_for(7ms);  // overruns three ticks
    inside.fetch_sub(1);
    ticks.fetch_add(1);
  });
  wait_for(pool, [&] { return ticks.load() >= 4; });
  t.cancel();
  pool.wait();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(plain, ticks.load());
  EXPECT_GE(first - made, 2ms) << "the first run comes one period after spawn_every";
  // Fixed rate, skipping what was missed: the first tick d comes 2 ms after
  // spawn_every, the first run ends 7 ms after d at the earliest, so the
  // next ticks are d + 8, d + 10 and d + 12 ms. Runs that caught up with the
  // missed ticks would all start right after the first one ended, d + 7 ms.
  EXPECT_GE(last - made, 14ms);
}

TEST_P(timer_test, ten_thousand_timers_from_several_threads) {
  weft::pool pool{options()};
  constexpr std::size_t n = 10'000;
  constexpr std::size_t makers = 4;
  std::vector<std::atomic<int>> ran(n);
  std::atomic<std::size_t> done{0};
  std::atomic<int> early{0};
  std::vector<weft::timer> timers(n);
  std::vector<std::thread> threads;
  for (std::size_t m = 0; m < makers; ++m) {
    threads.emplace_back([&, m] {
      std::mt19937 rng{static_cast<unsigned>(m)};
      for (std::size_t i = m; i < n; i += makers) {
        const auto delay = std::chrono::microseconds{rng() % 50'000};
        const auto due = clock_type::now() + delay;
        timers[i] = pool.spawn_after(delay, [&, i, due] {
          if (clock_type::now() < due) early.fetch_add(1);
          ran[i].fetch_add(1);
          done.fetch_add(1);
        });
      }
    });
  }
  for (auto& t : threads) t.join();
  // Every seventh cancelled: some before firing, some too late.
  std::size_t stopped = 0;
  for (std::size_t i = 0; i < n; i += 7) stopped += timers[i].cancel() ? 1 : 0;
  wait_for(pool, [&] { return done.load() == n - stopped; });
  pool.wait();
  EXPECT_EQ(early.load(), 0);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_LE(ran[i].load(), 1) << "timer " << i;
    if (i % 7 != 0) {
      ASSERT_EQ(ran[i].load(), 1) << "timer " << i;
    }
  }
  EXPECT_EQ(done.load(), n - stopped);
}

TEST_P(timer_test, an_idle_pool_with_a_pending_timer_uses_no_cpu) {
  weft::pool pool{options()};
  std::atomic<int> runs{0};
  weft::timer far = pool.spawn_after(1h, [&] { runs.fetch_add(1); });
  // Some work first, so that the workers have run and gone back to sleep.
  for (int i = 0; i < 100; ++i) pool.spawn([] {});
  pool.wait();
  std::this_thread::sleep_for(50ms);
  const auto cpu_before = process_cpu();
  const auto wall_before = clock_type::now();
  std::this_thread::sleep_for(200ms);
  const auto cpu = process_cpu() - cpu_before;
  const auto wall = clock_type::now() - wall_before;
  // A thread that spun or polled every millisecond would show: a spinning
  // one costs the whole 200 ms, a 1 ms poll several ms. Generous for a
  // loaded machine and for the sanitizers' own threads.
  EXPECT_LT(cpu, 40ms) << "over " << std::chrono::duration<double, std::milli>(wall).count()
                       << " ms";
  EXPECT_TRUE(far.cancel());
  EXPECT_EQ(runs.load(), 0);
}

TEST_P(timer_test, wait_sees_fired_timers_but_not_pending_ones) {
  weft::pool pool{options()};
  weft::timer far = pool.spawn_after(1h, [] {});
  const auto before = clock_type::now();
  pool.wait();  // not held up by the timer an hour away
  EXPECT_TRUE(pool.wait_for(10s));
  EXPECT_LT(clock_type::now() - before, 30s);
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};
  pool.spawn_after(1ms, [&] {
    started = true;
    std::this_thread::sleep_for(30ms);
    finished = true;
  });
  wait_for(pool, [&] { return started.load(); });
  pool.wait();  // the fired timer's job is ordinary work
  EXPECT_TRUE(finished.load());
  EXPECT_TRUE(far.cancel());
}

TEST_P(timer_test, exceptions_take_the_pools_error_path) {
  {
    weft::pool pool{options()};
    std::atomic<bool> fired{false};
    pool.spawn_after(1ms, [&] {
      fired = true;
      throw std::runtime_error("one-shot failed");
    });
    wait_for(pool, [&] { return fired.load(); });
    try {
      pool.wait();
      ADD_FAILURE() << "wait() did not rethrow the timer's exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "one-shot failed");
    }
  }
  {
    // With on_error; a periodic timer whose run throws stops.
    std::mutex m;
    std::vector<std::string> errors;  // guarded by m
    weft::pool pool{{.threads = GetParam(), .on_error = [&](std::exception_ptr e) {
                       try {
                         std::rethrow_exception(e);
                       } catch (const std::exception& x) {
                         const std::lock_guard lock{m};
                         errors.emplace_back(x.what());
                       }
                     }}};
    std::atomic<int> runs{0};
    weft::timer t = pool.spawn_every(1ms, [&] {
      if (runs.fetch_add(1) + 1 == 2) throw std::logic_error("second run failed");
    });
    wait_for(pool, [&] { return runs.load() >= 2; });
    pool.wait();
    std::this_thread::sleep_for(10ms);
    pool.wait();
    EXPECT_EQ(runs.load(), 2);
    EXPECT_FALSE(t.pending());
    EXPECT_FALSE(t.cancel()) << "it had stopped already";
    const std::lock_guard lock{m};
    EXPECT_EQ(errors, std::vector<std::string>{"second run failed"});
  }
}

TEST_P(timer_test, a_bad_period_is_a_usage_error) {
  weft::pool pool{options()};
  std::atomic<int> runs{0};
  EXPECT_THROW(pool.spawn_every(0ms, [&] { runs.fetch_add(1); }), weft::usage_error);
  EXPECT_THROW(pool.spawn_every(-1s, [&] { runs.fetch_add(1); }), weft::usage_error);
  EXPECT_THROW(pool.spawn_every(std::chrono::duration<double>(0.0), [&] { runs.fetch_add(1); }),
               weft::usage_error);
  try {
    pool.spawn_every(0s, [] {});
  } catch (const weft::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("period must be positive"), std::string::npos);
  }
  // Sub-nanosecond and enormous periods are fine.
  weft::timer tiny = pool.spawn_every(std::chrono::duration<double, std::nano>(0.25), [] {});
  weft::timer huge = pool.spawn_every(std::chrono::hours::max(), [&] { runs.fetch_add(1); });
  EXPECT_TRUE(tiny.cancel());
  pool.wait();
  EXPECT_TRUE(huge.cancel());
  EXPECT_EQ(runs.load(), 0);
}

TEST_P(timer_test, handles_are_movable_and_dropping_one_does_not_cancel) {
  weft::timer empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_FALSE(empty.pending());
  EXPECT_FALSE(empty.cancel());
  weft::pool pool{options()};
  std::atomic<int> runs{0};
  pool.spawn_after(2ms, [&] { runs.fetch_add(1); });  // handle dropped at once
  weft::timer a = pool.spawn_after(1h, [&] { runs.fetch_add(100); });
  weft::timer b = std::move(a);
  EXPECT_FALSE(a.valid());   // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_FALSE(a.cancel());  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(b.pending());
  b = pool.spawn_after(1ms, [&] { runs.fetch_add(1); });  // the hour-long one goes on
  wait_for(pool, [&] { return runs.load() == 2; });
  pool.wait();
  EXPECT_EQ(runs.load(), 2);
}

TEST_P(timer_test, a_callable_is_destroyed_once_it_cannot_run) {
  weft::pool pool{options()};
  std::atomic<int> alive{0};
  std::atomic<int> runs{0};
  weft::timer t = pool.spawn_after(1ms, [&runs, keep = tracked{alive}] { runs.fetch_add(1); });
  wait_for(pool, [&] { return runs.load() == 1; });
  pool.wait();
  EXPECT_EQ(alive.load(), 0) << "a one-shot's callable goes after its run, though its handle lives";
  EXPECT_TRUE(t.valid());
}

TEST_P(timer_test, destruction_cancels_waiting_timers) {
  std::atomic<int> alive{0};
  std::atomic<int> runs{0};
  weft::timer once;
  weft::timer every;
  {
    weft::pool pool{options()};
    once = pool.spawn_after(1h, [&runs, keep = tracked{alive}] { runs.fetch_add(1); });
    every = pool.spawn_every(1h, [&runs, keep = tracked{alive}] { runs.fetch_add(1); });
    EXPECT_EQ(alive.load(), 2);
  }
  EXPECT_EQ(alive.load(), 0);
  EXPECT_EQ(runs.load(), 0);
  // The handles outlive the pool.
  EXPECT_FALSE(once.pending());
  EXPECT_FALSE(every.pending());
  EXPECT_FALSE(once.cancel());
  EXPECT_FALSE(every.cancel());
}

TEST_P(timer_test, a_periodic_timer_running_at_destruction_stops_there) {
  std::atomic<int> ticks{0};
  std::atomic<int> alive{0};
  weft::timer t;
  {
    weft::pool pool{options()};
    t = pool.spawn_every(200us, [&ticks, keep = tracked{alive}] {
      ticks.fetch_add(1);
      std::this_thread::sleep_for(100us);
    });
    wait_for(pool, [&] { return ticks.load() >= 5; });
  }
  const int seen = ticks.load();
  EXPECT_EQ(alive.load(), 0);
  EXPECT_FALSE(t.pending());
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(ticks.load(), seen);
}

TEST_P(timer_test, during_destruction_outsiders_get_pool_closed_and_jobs_a_cancelled_timer) {
  std::atomic<bool> release{false};
  std::atomic<int> job_timer_pending{-1};
  std::atomic<int> runs{0};
  auto* pool = new weft::pool(options());
  // Holds the destructor up until we have seen pool_closed; then makes a
  // timer from inside the closing pool.
  pool->spawn([&] {
    while (!release.load()) std::this_thread::sleep_for(100us);
    weft::timer t = pool->spawn_after(0s, [&] { runs.fetch_add(1); });
    job_timer_pending = t.pending() ? 1 : 0;
  });
  std::thread destroyer{[pool] { delete pool; }};
  bool closed = false;
  std::vector<weft::timer> accepted;
  while (!closed) {
    try {
      accepted.push_back(pool->spawn_after(1h, [&] { runs.fetch_add(1); }));
    } catch (const weft::pool_closed& e) {
      closed = true;
      EXPECT_NE(std::string(e.what()).find("being destroyed"), std::string::npos);
    }
  }
  release = true;
  destroyer.join();
  EXPECT_EQ(job_timer_pending.load(), 0);
  EXPECT_EQ(runs.load(), 0);
  for (auto& t : accepted) EXPECT_FALSE(t.pending());
}

TEST_P(timer_test, a_timer_job_may_make_timers_and_spawn) {
  weft::pool pool{options()};
  std::atomic<int> depth{0};
  std::atomic<int> spawned{0};
  std::function<void()> next;
  next = [&] {
    pool.spawn([&] { spawned.fetch_add(1); });
    if (depth.fetch_add(1) + 1 < 5) pool.spawn_after(1ms, next);
  };
  pool.spawn_after(1ms, next);
  wait_for(pool, [&] { return depth.load() == 5 && spawned.load() == 5; });
  pool.wait();
  EXPECT_EQ(depth.load(), 5);
}

TEST_P(timer_test, timers_of_two_pools_are_independent) {
  weft::pool a{options()};
  weft::pool b{{.threads = 1, .name = "other"}};
  std::atomic<int> on_a{0};
  std::atomic<int> on_b{0};
  for (int i = 0; i < 20; ++i) {
    a.spawn_after(std::chrono::microseconds{i * 100}, [&] { on_a.fetch_add(1); });
    b.spawn_after(std::chrono::microseconds{i * 100}, [&] { on_b.fetch_add(1); });
  }
  wait_for(a, [&] { return on_a.load() == 20; });
  wait_for(b, [&] { return on_b.load() == 20; });
  a.wait();
  b.wait();
}

// ---------------------------------------------------------------------------
// Saturating conversions (issue 41, defect 3): every delay, time point and
// period is converted without overflow, whatever its rep, period or clock.
// Too far ahead to represent (max(), +infinity) never comes, the past
// (min(), -infinity) fires at once, and NaN is a usage_error. Under UBSan
// (the asan preset) an overflow on the way aborts the test.

// Waits (running the pool's jobs where that is the only way) until pred()
// holds or `bound` has passed, and returns pred(): a generous bound, only
// there so that a failure ends.
template <class P>
bool wait_at_most(weft::pool& pool, std::chrono::milliseconds bound, P pred) {
  const auto limit = clock_type::now() + bound;
  pool.wait_until([&] { return pred() || clock_type::now() >= limit; });
  return pred();
}

TEST_P(timer_test, a_time_too_far_ahead_on_any_clock_never_comes) {
  std::atomic<int> runs{0};
  std::atomic<int> alive{0};
  weft::timer left;
  {
    weft::pool pool{options()};
    const auto f = [&runs, keep = tracked{alive}] { runs.fetch_add(1); };
    std::vector<weft::timer> never;
    // Another clock's max(): its distance from now overflowed and fired at once.
    never.push_back(pool.spawn_at(sys_at<std::chrono::seconds>::max(), f));
    never.push_back(pool.spawn_at(sys_at<std::chrono::hours>::max(), f));
    never.push_back(pool.spawn_at(sys_clock::time_point::max(), f));
    never.push_back(pool.spawn_at(sys_at<fsec>(fsec(infinity)), f));
    never.push_back(pool.spawn_at(sys_at<fsec>(fsec(1e300)), f));
    never.push_back(pool.spawn_at(steady_at<fsec>(fsec(infinity)), f));
    never.push_back(pool.spawn_at(steady_at<std::chrono::duration<std::uint64_t>>::max(), f));
    never.push_back(pool.spawn_after(fsec(infinity), f));
    never.push_back(pool.spawn_after(std::chrono::seconds::max(), f));
    never.push_back(pool.spawn_after(std::chrono::duration<double, std::ratio<86400>>(1e300), f));
    never.push_back(
        pool.spawn_after(std::chrono::duration<std::uint64_t, std::ratio<3600>>::max(), f));
    never.push_back(
        pool.spawn_after(std::chrono::duration<std::int64_t, std::ratio<1, 3>>::max(), f));
    never.push_back(pool.spawn_after(
        std::chrono::duration<long double>(std::numeric_limits<long double>::max()), f));
    std::this_thread::sleep_for(50ms);
    pool.wait();
    EXPECT_EQ(runs.load(), 0);
    for (std::size_t i = 0; i < never.size(); ++i) {
      EXPECT_TRUE(never[i].pending()) << "timer " << i;
      EXPECT_TRUE(never[i].cancel()) << "timer " << i;
    }
    EXPECT_EQ(alive.load(), 1) << "cancel() destroyed every copy but f itself";
    // One left waiting when the pool goes: the destructor cancels it.
    left = pool.spawn_at(sys_at<std::chrono::seconds>::max(), f);
  }
  EXPECT_EQ(alive.load(), 0);
  EXPECT_FALSE(left.pending());
  EXPECT_EQ(runs.load(), 0);
}

TEST_P(timer_test, a_past_time_on_any_clock_fires_at_once) {
  weft::pool pool{options()};
  std::atomic<int> runs{0};
  const auto f = [&runs] { runs.fetch_add(1); };
  // Another clock's min(): its distance from now overflowed and never came.
  pool.spawn_at(sys_clock::time_point::min(), f);
  pool.spawn_at(sys_at<std::chrono::seconds>::min(), f);
  pool.spawn_at(sys_at<std::chrono::hours>::min(), f);
  pool.spawn_at(sys_at<fsec>(fsec(-infinity)), f);
  pool.spawn_at(sys_at<fsec>(fsec(-1e300)), f);
  pool.spawn_at(sys_clock::now() - std::chrono::hours(24 * 365 * 100), f);
  pool.spawn_at(steady_at<std::chrono::seconds>::min(), f);
  pool.spawn_at(steady_at<fsec>(fsec(-infinity)), f);
  pool.spawn_after(fsec(-infinity), f);
  pool.spawn_after(std::chrono::seconds::min(), f);
  pool.spawn_after(std::chrono::duration<std::int64_t, std::ratio<1, 3>>::min(), f);
  pool.spawn_after(std::chrono::duration<double, std::ratio<86400>>(-1e300), f);
  constexpr int timers = 12;
  EXPECT_TRUE(wait_at_most(pool, 10s, [&] { return runs.load() == timers; }))
      << runs.load() << " of " << timers << " fired";
  pool.wait();
  EXPECT_EQ(runs.load(), timers);
}

TEST_P(timer_test, a_nan_delay_time_or_period_is_a_usage_error) {
  weft::pool pool{options()};
  std::atomic<int> runs{0};
  std::atomic<int> alive{0};
  // Each call gets its own callable, which is destroyed with the call.
  auto f = [&] { return [&runs, keep = tracked{alive}] { runs.fetch_add(1); }; };
  expect_nan_error([&] { (void)pool.spawn_after(fsec(not_a_number), f()); },
                   "weft::pool::spawn_after");
  expect_nan_error(
      [&] {
        (void)pool.spawn_after(
            std::chrono::duration<float, std::milli>(std::numeric_limits<float>::quiet_NaN()), f());
      },
      "weft::pool::spawn_after");
  expect_nan_error([&] { (void)pool.spawn_at(sys_at<fsec>(fsec(not_a_number)), f()); },
                   "weft::pool::spawn_at");
  expect_nan_error([&] { (void)pool.spawn_at(steady_at<fsec>(fsec(not_a_number)), f()); },
                   "weft::pool::spawn_at");
  expect_nan_error([&] { (void)pool.spawn_every(fsec(not_a_number), f()); },
                   "weft::pool::spawn_every");
  std::this_thread::sleep_for(5ms);
  pool.wait();
  EXPECT_EQ(runs.load(), 0);
  EXPECT_EQ(alive.load(), 0);
}

TEST_P(timer_test, a_period_too_long_to_represent_never_comes_round) {
  weft::pool pool{options()};
  std::atomic<int> runs{0};
  const auto f = [&runs] { runs.fetch_add(1); };
  // The first run is one period from now, which never comes: the timer
  // stays pending, and never fires, until cancelled.
  std::vector<weft::timer> never;
  never.push_back(pool.spawn_every(fsec(infinity), f));
  never.push_back(pool.spawn_every(std::chrono::seconds::max(), f));
  never.push_back(pool.spawn_every(std::chrono::duration<double, std::ratio<86400>>(1e300), f));
  never.push_back(
      pool.spawn_every(std::chrono::duration<std::uint64_t, std::ratio<3600>>::max(), f));
  never.push_back(
      pool.spawn_every(std::chrono::duration<std::int64_t, std::ratio<1, 3>>::max(), f));
  std::this_thread::sleep_for(50ms);
  pool.wait();
  EXPECT_EQ(runs.load(), 0);
  for (std::size_t i = 0; i < never.size(); ++i) {
    EXPECT_TRUE(never[i].pending()) << "timer " << i;
    EXPECT_TRUE(never[i].cancel()) << "timer " << i;
  }
  // -infinity is not positive: the bad-period error.
  try {
    (void)pool.spawn_every(fsec(-infinity), f);
    ADD_FAILURE() << "spawn_every accepted -infinity";
  } catch (const weft::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("period must be positive"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(workers, timer_test, ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
