// weft::pool, weft::future and pool-level behaviour, over 0, 1, 2, 4 and 8 workers.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;

class pool_test : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

// Seed 000's recursive Fibonacci: spawn two jobs, then run jobs until both
// have finished.
int fib_spawn(weft::pool& pool, int n) {
  if (n < 2) return n;
  int a = 0;
  int b = 0;
  std::atomic<int> done{0};
  pool.spawn([&] {
    a = fib_spawn(pool, n - 1);
    done.fetch_add(1, std::memory_order_release);
  });
  pool.spawn([&] {
    b = fib_spawn(pool, n - 2);
    done.fetch_add(1, std::memory_order_release);
  });
  pool.wait_until([&] { return done.load(std::memory_order_acquire) == 2; });
  return a + b;
}

constexpr int fib_value(int n) { return n < 2 ? n : fib_value(n - 1) + fib_value(n - 2); }

TEST_P(pool_test, size_matches_options) {
  weft::pool pool{options()};
  EXPECT_EQ(pool.size(), GetParam());
  EXPECT_EQ(pool.stats().workers, GetParam());
}

TEST_P(pool_test, submit_returns_value_and_void) {
  weft::pool pool{options()};
  weft::future<int> f = pool.submit([] { return 21 * 2; });
  EXPECT_TRUE(f.valid());
  EXPECT_EQ(f.get(), 42);
  EXPECT_FALSE(f.valid());
  bool ran = false;
  weft::future<void> v = pool.submit([&] { ran = true; });
  v.wait();
  EXPECT_TRUE(v.ready());
  v.get();
  EXPECT_TRUE(ran);
}

TEST_P(pool_test, future_moves_and_move_only_results) {
  weft::pool pool{options()};
  weft::future<std::unique_ptr<int>> f = pool.submit([] { return std::make_unique<int>(7); });
  weft::future<std::unique_ptr<int>> g = std::move(f);
  EXPECT_FALSE(f.valid());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(*g.get(), 7);
}

TEST_P(pool_test, empty_future_is_a_usage_error) {
  weft::pool pool{options()};
  weft::future<int> none;
  EXPECT_THROW(none.wait(), weft::usage_error);
  auto f = pool.submit([] { return 1; });
  EXPECT_EQ(f.get(), 1);
  EXPECT_THROW(f.get(), weft::usage_error);
}

TEST_P(pool_test, future_rethrows_the_jobs_exception) {
  weft::pool pool{options()};
  auto f = pool.submit([]() -> int { throw std::runtime_error("boom"); });
  try {
    (void)f.get();
    FAIL() << "get() did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "boom");
  }
  EXPECT_NO_THROW(pool.wait());  // the future delivered it; the pool has nothing left
}

TEST_P(pool_test, results_come_back_in_submission_order) {
  // Seed 002: results appear in the order the jobs were scheduled.
  weft::pool pool{options()};
  std::vector<weft::future<int>> futures;
  for (int i = 1; i <= 5; ++i) futures.push_back(pool.submit([i] { return i * 10 + i; }));
  std::vector<int> results;
  for (auto& f : futures) results.push_back(f.get());
  EXPECT_EQ(results, (std::vector<int>{11, 22, 33, 44, 55}));
}

TEST_P(pool_test, submit_then_wait_runs_everything) {
  // Seed 000: Submit a batch, then Wait() for all of it.
  weft::pool pool{options()};
  const std::size_t n = weft::test::scaled(20000, 100);
  std::vector<std::atomic<int>> ran(n);
  for (std::size_t i = 0; i < n; ++i) pool.spawn([&ran, i] { ran[i].fetch_add(1); });
  pool.wait();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(ran[i].load(), 1) << "job " << i;
}

TEST_P(pool_test, wait_covers_jobs_spawned_by_jobs) {
  weft::pool pool{options()};
  std::atomic<int> leaves{0};
  for (int i = 0; i < 10; ++i) {
    pool.spawn([&] {
      for (int j = 0; j < 10; ++j) {
        pool.spawn([&] {
          for (int k = 0; k < 10; ++k) pool.spawn([&] { leaves.fetch_add(1); });
        });
      }
    });
  }
  pool.wait();
  EXPECT_EQ(leaves.load(), 1000);
}

TEST_P(pool_test, wait_rethrows_detached_exceptions_oldest_first) {
  weft::pool pool{options()};
  pool.spawn([] { throw std::runtime_error("first"); });
  try {
    pool.wait();
    FAIL() << "wait() did not rethrow";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "first");
  }
  pool.spawn([] { throw std::logic_error("second"); });
  pool.spawn([] { throw std::out_of_range("third"); });
  int thrown = 0;
  for (int i = 0; i < 2; ++i) {
    try {
      pool.wait();
    } catch (const std::exception&) {
      ++thrown;
    }
  }
  EXPECT_EQ(thrown, 2) << "every exception is rethrown by exactly one wait()";
  EXPECT_NO_THROW(pool.wait());
}

TEST_P(pool_test, on_error_receives_every_detached_exception) {
  std::mutex m;
  std::vector<std::string> seen;
  weft::pool pool{{.threads = GetParam(), .on_error = [&](std::exception_ptr e) {
                     try {
                       std::rethrow_exception(e);
                     } catch (const std::exception& ex) {
                       std::lock_guard lock{m};
                       seen.emplace_back(ex.what());
                     }
                   }}};
  for (int i = 0; i < 50; ++i) pool.spawn([] { throw std::runtime_error("x"); });
  EXPECT_NO_THROW(pool.wait());
  std::lock_guard lock{m};
  EXPECT_EQ(seen.size(), 50U);
}

TEST_P(pool_test, discarded_future_sends_its_exception_to_the_pool) {
  weft::pool pool{options()};
  std::atomic<bool> go{false};
  {
    auto f = pool.submit([&] {
      while (!go.load()) std::this_thread::yield();
      throw std::runtime_error("nobody asked");
    });
    if (GetParam() == 0) {
      go = true;  // sequential: the job runs inside wait() below, after the future is gone
    }
  }  // the future is dropped before its job finishes
  go = true;
  EXPECT_THROW(pool.wait(), std::runtime_error);
}

TEST_P(pool_test, wait_from_own_job_is_a_usage_error) {
  weft::pool pool{options()};
  auto f = pool.submit([&] {
    try {
      pool.wait();
    } catch (const weft::usage_error&) {
      return true;
    }
    return false;
  });
  EXPECT_TRUE(f.get());
}

TEST_P(pool_test, a_job_waiting_for_its_own_future_is_a_usage_error) {
  // The job can only reach its own future through something shared; its
  // wait() would wait for the job it runs in: it hung.
  weft::pool pool{options()};
  weft::future<void> own;
  std::atomic<bool> published{false};
  std::atomic<int> outcome{0};  // 1: refused as such, 2: anything else
  own = pool.submit([&] {
    while (!published.load()) std::this_thread::yield();
    try {
      own.wait();
      outcome = 2;
    } catch (const weft::usage_error& e) {
      outcome = std::string{e.what()}.find("inside the work") != std::string::npos ? 1 : 2;
    }
  });
  published = true;
  own.get();
  EXPECT_EQ(outcome.load(), 1);
}

TEST_P(pool_test, wait_until_fibonacci_seed_000) {
  weft::pool pool{options()};
  const int n = weft::test::stress_scale() < 1 ? 14 : 18;
  EXPECT_EQ(fib_spawn(pool, n), fib_value(n));  // from outside the pool
  EXPECT_EQ(pool.submit([&] { return fib_spawn(pool, n); }).get(), fib_value(n));  // inside
}

TEST_P(pool_test, worker_index_is_in_range_inside_and_empty_outside) {
  weft::pool pool{options()};
  EXPECT_FALSE(weft::this_worker::index().has_value());
  std::vector<weft::future<std::optional<std::size_t>>> ids;
  for (int i = 0; i < 64; ++i)
    ids.push_back(pool.submit([] { return weft::this_worker::index(); }));
  for (auto& f : ids) {
    const auto id = f.get();
    ASSERT_TRUE(id.has_value());
    EXPECT_LT(*id, pool.slots());
  }
  EXPECT_EQ(pool.slots(), GetParam() == 0 ? 1 : GetParam() + 1);
}

// Per-worker state sized pool.slots() and indexed by this_worker::index()
// works in every job, also in those that outside threads run in wait_until
// (the helper slot); and no two threads use one index at once.
TEST_P(pool_test, per_worker_state_indexed_by_worker_index_is_never_shared) {
  weft::pool pool{options()};
  std::vector<std::atomic<bool>> in_use(pool.slots());
  std::atomic<int> shared{0};
  std::atomic<int> done{0};
  constexpr int jobs = 2000;
  auto job = [&] {
    const std::size_t i = weft::this_worker::index().value();
    if (in_use.at(i).exchange(true)) shared.fetch_add(1);
    for (int k = 0; k < 50; ++k) std::atomic_signal_fence(std::memory_order_seq_cst);
    in_use.at(i).store(false);
    done.fetch_add(1);
  };
  // A sequential pool runs its jobs on whichever thread waits, each with
  // index 0 (documented): one waiting thread there.
  const int threads = GetParam() == 0 ? 1 : 3;
  std::vector<std::thread> waiters;
  for (int t = 0; t < threads; ++t) {
    waiters.emplace_back([&] {
      for (int k = 0; k < jobs / 3; ++k) pool.spawn(job);
      pool.wait_until([&] { return done.load() >= jobs / 3 * threads; });
    });
  }
  for (auto& w : waiters) w.join();
  pool.wait();
  EXPECT_EQ(done.load(), jobs / 3 * threads);
  EXPECT_EQ(shared.load(), 0);
}

// An outside wait_until sleeps while no job finishes, and is woken when one
// does: its predicate is evaluated a few times, not once per millisecond.
TEST_P(pool_test, outside_wait_until_sleeps_while_nothing_finishes) {
  if (GetParam() == 0) GTEST_SKIP() << "a sequential pool's waiter runs the job itself";
  weft::pool pool{options()};
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};
  pool.spawn([&] {
    started.store(true);
    std::this_thread::sleep_for(100ms);
    finished.store(true);
  });
  while (!started.load()) std::this_thread::yield();
  int evaluations = 0;
  pool.wait_until([&] {
    ++evaluations;
    return finished.load();
  });
  // 1 + 2 + 4 + ... + 64 ms of timeouts: about 8 evaluations in 100 ms;
  // polling every millisecond would make it 100.
  EXPECT_LE(evaluations, 20);
  pool.wait();
}

TEST_P(pool_test, jobs_of_one_pool_wait_for_another_pool) {
  // Seed 002's nested schedulers: an inner pool used from the outer pool's
  // jobs, and an inner job that submits back to the outer pool.
  weft::pool outer{options()};
  std::vector<weft::future<int>> results;
  for (int i = 0; i < 8; ++i) {
    results.push_back(outer.submit([&outer, i, threads = GetParam()] {
      weft::pool inner{{.threads = threads % 3}};
      auto a = inner.submit([i] { return i; });
      auto b = inner.submit([&outer, i] { return outer.submit([i] { return i * 100; }).get(); });
      return a.get() + b.get();
    }));
  }
  for (int i = 0; i < 8; ++i) EXPECT_EQ(results[static_cast<std::size_t>(i)].get(), i * 101);
}

TEST_P(pool_test, a_worker_waiting_for_another_pool_wakes_when_its_last_job_ends) {
  // A worker of one pool waiting for another pool (wait(), wait_for(), its
  // destructor), with nothing of its own to run, naps; the other pool's
  // worker that runs out of work wakes it (docs/waiting.md, "A pool's wait
  // on a worker of another pool"). With the backoff's pauses scaled to
  // seconds, a wait that slept them out would return long after the end of
  // the other pool's last job.
  if (GetParam() == 0) GTEST_SKIP() << "needs a worker to wait on";
  weft::pool outer{options()};
  const weft::test::backoff_sleep_scaled scaled{10'000};  // 50 us -> 0.5 s
  using clock = std::chrono::steady_clock;
  enum class how { wait, wait_for, destroy };
  for (const how h : {how::wait, how::wait_for, how::destroy}) {
    SCOPED_TRACE(h == how::wait ? "wait()" : h == how::wait_for ? "wait_for()" : "~pool()");
    const auto late = outer
                          .submit([h] {
                            auto inner =
                                std::make_unique<weft::pool>(weft::pool_options{.threads = 1});
                            std::atomic<bool> started{false};
                            clock::time_point ended;
                            inner->spawn([&] {
                              started.store(true);
                              std::this_thread::sleep_for(600ms);
                              ended = clock::now();
                            });
                            EXPECT_TRUE(weft::test::wait_for(started));
                            if (h == how::wait) inner->wait();
                            if (h == how::wait_for) {
                              EXPECT_TRUE(inner->wait_for(60s));
                            }
                            inner.reset();
                            return clock::now() - ended;
                          })
                          .get();
    EXPECT_LT(late, 300ms);
  }
}

TEST_P(pool_test, a_worker_in_wait_until_wakes_when_a_job_elsewhere_finishes) {
  // A worker in wait_until(pred) with nothing to run naps until a job of
  // the pool it waits on finishes (docs/waiting.md, "wait_until on a
  // worker"). With the backoff's pauses scaled to seconds, a wait that
  // slept them out would return long after the job that made pred true.
  // On a worker of the pool itself, and on a worker of another pool.
  if (GetParam() < 2) GTEST_SKIP() << "needs two workers";
  weft::pool pool{options()};
  weft::pool other{{.threads = 1}};
  const weft::test::backoff_sleep_scaled scaled{10'000};  // 50 us -> 0.5 s
  using clock = std::chrono::steady_clock;
  for (weft::pool* waiter : {&pool, &other}) {
    SCOPED_TRACE(waiter == &pool ? "a worker of the pool" : "a worker of another pool");
    const auto late = waiter
                          ->submit([&pool] {
                            std::atomic<bool> started{false};
                            std::atomic<bool> finished{false};
                            clock::time_point ended;
                            pool.spawn([&] {
                              started.store(true);
                              std::this_thread::sleep_for(600ms);
                              ended = clock::now();
                              finished.store(true);
                            });
                            EXPECT_TRUE(weft::test::wait_for(started));
                            pool.wait_until([&] { return finished.load(); });
                            return clock::now() - ended;
                          })
                          .get();
    EXPECT_LT(late, 300ms);
  }
}

TEST_P(pool_test, destructor_finishes_submitted_work) {
  std::atomic<int> ran{0};
  {
    weft::pool pool{options()};
    for (int i = 0; i < 200; ++i) {
      pool.spawn([&] {
        std::this_thread::sleep_for(10us);
        ran.fetch_add(1);
      });
    }
  }
  EXPECT_EQ(ran.load(), 200);
}

TEST_P(pool_test, submitting_during_destruction_throws_pool_closed_and_loses_nothing) {
  std::atomic<int> accepted{0};
  std::atomic<int> ran{0};
  std::atomic<bool> release{false};
  std::atomic<bool> child_ran{false};
  auto* pool = new weft::pool(options());
  // A job that holds the destructor up until we have seen pool_closed (so the
  // pool is alive while we submit), and that spawns a child while the pool
  // is closing: the pool's own jobs may.
  pool->spawn([&] {
    while (!release.load()) std::this_thread::sleep_for(100us);
    pool->spawn([&] { child_ran = true; });
  });
  std::thread destroyer{[pool] { delete pool; }};
  bool closed = false;
  while (!closed) {
    try {
      pool->spawn([&] { ran.fetch_add(1); });
      accepted.fetch_add(1);
    } catch (const weft::pool_closed& e) {
      closed = true;
      EXPECT_NE(std::string(e.what()).find("being destroyed"), std::string::npos);
    }
  }
  release = true;
  destroyer.join();
  EXPECT_TRUE(child_ran.load());
  EXPECT_EQ(ran.load(), accepted.load()) << "every accepted job ran";
}

TEST_P(pool_test, eight_outside_threads_submit_concurrently) {
  // Through the injector: every job runs exactly once.
  weft::pool pool{options()};
  constexpr std::size_t threads = 8;
  const std::size_t per_thread = weft::test::scaled(100000, 1000);
  std::vector<std::atomic<unsigned char>> ran(threads * per_thread);
  std::vector<std::thread> submitters;
  for (std::size_t t = 0; t < threads; ++t) {
    submitters.emplace_back([&, t] {
      for (std::size_t i = 0; i < per_thread; ++i) {
        pool.spawn([&ran, k = t * per_thread + i] { ran[k].fetch_add(1); });
      }
    });
  }
  for (auto& s : submitters) s.join();
  pool.wait();
  for (std::size_t k = 0; k < ran.size(); ++k) ASSERT_EQ(ran[k].load(), 1) << "job " << k;
}

TEST_P(pool_test, ten_thousand_nested_waits_do_not_overflow_the_stack) {
  weft::pool pool{options()};
  const int depth = 10000;
  std::function<int(int)> nest = [&](int level) -> int {
    if (level == 0) return 0;
    return pool.submit([&, level] { return nest(level - 1); }).get() + 1;
  };
  EXPECT_EQ(pool.submit([&] { return nest(depth); }).get(), depth);
  EXPECT_GT(pool.stats().handoffs, 0U) << "the help-depth limit was never reached";
}

TEST_P(pool_test, memory_stays_bounded_in_a_recursive_workload) {
  if (GetParam() == 0) {
    GTEST_SKIP() << "sequential mode runs jobs in submission order (breadth first), so this "
                    "shape keeps every job alive at once there";
  }
  weft::pool pool{options()};
  const int n = weft::test::stress_scale() < 1 ? 16 : 20;
  EXPECT_EQ(pool.submit([&] { return fib_spawn(pool, n); }).get(), fib_value(n));
  // fib_spawn(20) runs ~22,000 jobs; the slots in use at once grow with the
  // recursion depth and the number of workers, not with the job count.
  EXPECT_LT(pool.stats().job_slots, 8000U);
}

TEST_P(pool_test, idle_pool_uses_no_cpu) {
  weft::pool pool{options()};
  for (int i = 0; i < 1000; ++i) pool.spawn([] {});
  pool.wait();
  std::this_thread::sleep_for(20ms);  // past the workers' spin phase
  const auto before = weft::test::process_cpu_time();
  std::this_thread::sleep_for(300ms);
  const auto used = weft::test::process_cpu_time() - before;
  // A worker that never parks would burn ~300 ms per worker here.
  EXPECT_LT(used, 30ms) << "idle workers used " << used.count() << " us of CPU";
}

TEST(pool, available_parallelism_is_at_least_one_and_the_default_size) {
  const std::size_t n = weft::available_parallelism();
  EXPECT_GE(n, 1U);
  EXPECT_LE(n, std::max(1U, std::thread::hardware_concurrency()));
  weft::pool pool;
  EXPECT_EQ(pool.size(), n);
}

TEST(pool, sequential_mode_is_deterministic_seed_002) {
  // Seed 002's nested sequential schedulers print the same string every run.
  std::string out;
  {
    weft::pool outer{{.threads = 0}};
    outer.spawn([&] { out += std::string(10, 'a'); });
    outer.spawn([&] {
      out += std::string(10, 'b');
      weft::pool inner{{.threads = 0}};
      inner.spawn([&] {
        out += std::string(10, 'c');
        outer.spawn([&] { out += std::string(10, 'e'); });
      });
      inner.spawn([&] { out += std::string(10, 'd'); });
      inner.wait();
    });
    outer.spawn([&] { out += std::string(10, 'f'); });
    outer.wait();
  }
  EXPECT_EQ(out, std::string(10, 'a') + std::string(10, 'b') + std::string(10, 'c') +
                     std::string(10, 'd') + std::string(10, 'f') + std::string(10, 'e'));
}

TEST(pool, sequential_mode_runs_on_the_waiting_thread_in_order) {
  weft::pool pool{{.threads = 0}};
  std::vector<int> order;
  const auto caller = std::this_thread::get_id();
  bool same_thread = true;
  for (int i = 0; i < 100; ++i) {
    pool.spawn([&, i] {
      order.push_back(i);
      same_thread = same_thread && std::this_thread::get_id() == caller;
    });
  }
  EXPECT_TRUE(order.empty()) << "nothing runs before a wait";
  pool.wait();
  std::vector<int> expected(100);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
  EXPECT_TRUE(same_thread);
}

INSTANTIATE_TEST_SUITE_P(workers, pool_test, ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace

namespace {

TEST(pool_lanes, a_lane_is_reused_once_its_thread_has_ended) {
  weft::pool pool{{.threads = 2}};
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) {
    std::thread([&] { pool.submit([&] { ran.fetch_add(1); }).get(); }).join();
  }
  EXPECT_EQ(ran.load(), 100);
  EXPECT_EQ(pool.stats().lanes, 1U) << "each thread ended before the next began";
}

TEST(pool_lanes, more_outside_threads_than_lanes_fall_back_to_the_injector) {
  weft::pool pool{{.threads = 2}};
  constexpr int threads = 100;
  const int per_thread = static_cast<int>(weft::test::scaled(2000, 100));
  std::atomic<int> ran{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < threads; ++t) {
    submitters.emplace_back([&] {
      // All threads are alive at once, so some find every lane taken.
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();
      for (int i = 0; i < per_thread; ++i) pool.spawn([&] { ran.fetch_add(1); });
    });
  }
  for (auto& s : submitters) s.join();
  pool.wait();
  EXPECT_EQ(ran.load(), threads * per_thread);
  EXPECT_LE(pool.stats().lanes, 64U);
}

TEST(pool_lanes, one_worker_runs_an_outside_threads_jobs_in_the_order_they_were_queued) {
  // The worker is held while the jobs queue up in this thread's lane, so it
  // then takes them in batches, and queues each batch in its own deque
  // (pool::keep_batch()) in the order that makes it run the oldest first:
  // job by job while less than lane_backlog jobs are left behind (500), and
  // with one push_many before that (5,000).
  for (const int n : {500, 5000}) {
    weft::pool pool{{.threads = 1}};
    std::atomic<bool> started{false};
    std::atomic<bool> go{false};
    pool.spawn([&] {
      started.store(true);
      while (!go.load()) std::this_thread::yield();
    });
    while (!started.load()) std::this_thread::yield();
    std::vector<int> order;  // only the worker appends
    order.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) pool.spawn([&order, i] { order.push_back(i); });
    go.store(true);
    pool.wait();
    std::vector<int> expected(static_cast<std::size_t>(n));
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(order, expected) << n << " jobs";
  }
}

TEST(pool_lanes, a_long_backlog_taken_in_batches_runs_every_job_once) {
  // Batches taken from a lane with thousands of jobs behind them are
  // published with one store (pool::keep_batch()); the other workers steal
  // from them while their taker runs them, and take more batches from the
  // lane. Every job runs exactly once.
  for (const std::size_t workers : {2, 4}) {
    weft::pool pool{{.threads = workers}};
    const std::size_t n = weft::test::scaled(40'000, 4'000);
    std::vector<std::atomic<int>> ran(n);
    for (int round = 0; round < 3; ++round) {
      pool.pause();
      // One by one: spawn_all would queue one job for all of them.
      for (std::size_t i = 0; i < n; ++i) pool.spawn([&ran, i] { ran[i].fetch_add(1); });
      pool.resume();
      pool.wait();
    }
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(ran[i].load(), 3) << "job " << i;
  }
}

TEST(pool_lanes, a_lane_that_keeps_filling_slowly_is_still_taken) {
  // A searching worker leaves a lane alone while its thread keeps pushing
  // and less than a batch waits (pool::lanes_filling()); the lane must
  // still be taken once its thread stops, not only when a batch has built
  // up: here the thread pushes two jobs at a time and waits for the second
  // to run.
  weft::pool pool{{.threads = 1}};
  std::atomic<int> ran{0};
  const int rounds = static_cast<int>(weft::test::scaled(2000, 200));
  for (int i = 0; i < rounds; ++i) {
    pool.spawn([] {});
    pool.spawn([&] { ran.fetch_add(1); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (ran.load() <= i) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "job " << i << " never ran";
      std::this_thread::yield();
    }
  }
}

TEST(pool_lanes, a_thread_may_outlive_the_pools_it_submitted_to) {
  std::thread t{[] {
    for (int round = 0; round < 20; ++round) {
      weft::pool pool{{.threads = 1}};
      EXPECT_EQ(pool.submit([round] { return round; }).get(), round);
    }  // each pool ends while this thread still holds a binding to its lane
  }};
  t.join();  // the thread's bindings are released without touching freed pools
}

}  // namespace
