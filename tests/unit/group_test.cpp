// weft::task_group: waiting, cancellation, exceptions, nesting.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;

class group_test : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

int fib(weft::pool& pool, int n) {
  if (n < 2) return n;
  int a = 0;
  int b = 0;
  weft::task_group g{pool};
  g.spawn([&] { a = fib(pool, n - 1); });
  g.spawn([&] { b = fib(pool, n - 2); });
  g.wait();
  return a + b;
}

TEST_P(group_test, wait_returns_when_all_jobs_finished) {
  weft::pool pool{options()};
  weft::task_group g{pool};
  std::atomic<int> n{0};
  for (int i = 0; i < 1000; ++i) g.spawn([&] { n.fetch_add(1); });
  g.wait();
  EXPECT_EQ(n.load(), 1000);
}

TEST_P(group_test, nested_groups_compute_fibonacci) {
  weft::pool pool{options()};
  EXPECT_EQ(fib(pool, 16), 987);
  EXPECT_EQ(pool.submit([&] { return fib(pool, 16); }).get(), 987);
}

TEST_P(group_test, first_exception_cancels_the_rest_and_is_rethrown) {
  // Seed 002: one failing job cancels the others and its exception reaches
  // the waiter.
  weft::pool pool{options()};
  weft::task_group g{pool};
  std::atomic<int> ran_after{0};
  g.spawn([] { throw std::runtime_error("divide by zero"); });
  // Wait until the failure has cancelled the group (no sleep: under the
  // sanitizers unwinding can take milliseconds). In sequential mode nothing
  // runs until wait(), and the failing job is first in line.
  if (GetParam() != 0) {
    while (!g.is_cancelled()) std::this_thread::yield();
  }
  for (int i = 0; i < 100; ++i) g.spawn([&] { ran_after.fetch_add(1); });
  try {
    g.wait();
    FAIL() << "wait() did not rethrow";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "divide by zero");
  }
  EXPECT_EQ(ran_after.load(), 0) << "jobs spawned after the failure were skipped";
  // The group is fresh again after wait().
  g.spawn([&] { ran_after.fetch_add(1); });
  EXPECT_NO_THROW(g.wait());
  EXPECT_EQ(ran_after.load(), 1);
}

TEST_P(group_test, cancel_skips_jobs_that_have_not_started) {
  weft::pool pool{options()};
  weft::task_group g{pool};
  std::atomic<int> ran{0};
  g.cancel();
  EXPECT_TRUE(g.is_cancelled());
  for (int i = 0; i < 100; ++i) g.spawn([&] { ran.fetch_add(1); });
  g.wait();
  EXPECT_EQ(ran.load(), 0);
  EXPECT_FALSE(g.is_cancelled());
}

TEST_P(group_test, wait_says_whether_the_group_was_cancelled) {
  // A cancelled group is no error (oneTBB's task_group_status), but its
  // waiter learns of it: is_cancelled() is false again once wait() returns.
  weft::pool pool{options()};
  weft::task_group g{pool};
  std::atomic<int> ran{0};
  g.spawn([&] { ran.fetch_add(1); });
  EXPECT_EQ(g.wait(), weft::group_status::complete);
  g.cancel();
  g.spawn([&] { ran.fetch_add(1); });
  EXPECT_EQ(g.wait(), weft::group_status::cancelled);
  EXPECT_EQ(ran.load(), 1);
  EXPECT_EQ(g.wait(), weft::group_status::complete) << "the next wait finds the group fresh";
  g.cancel();
  EXPECT_EQ(g.run_and_wait([&] { ran.fetch_add(1); }), weft::group_status::cancelled);
  EXPECT_EQ(ran.load(), 1);
  // A job's exception is rethrown instead.
  g.spawn([] { throw std::runtime_error("boom"); });
  EXPECT_THROW((void)g.wait(), std::runtime_error);
  EXPECT_EQ(g.wait(), weft::group_status::complete);
}

TEST_P(group_test, running_jobs_can_observe_cancellation) {
  weft::pool pool{options()};
  if (GetParam() == 0) GTEST_SKIP() << "needs a job running while the caller cancels";
  weft::task_group g{pool};
  std::atomic<bool> started{false};
  std::atomic<bool> observed{false};
  g.spawn([&] {
    started = true;
    while (!g.is_cancelled()) std::this_thread::yield();
    observed = true;
  });
  while (!started.load()) std::this_thread::yield();
  g.cancel();
  g.wait();
  EXPECT_TRUE(observed.load());
}

TEST_P(group_test, destructor_waits_and_hands_an_uncollected_exception_to_the_pool) {
  weft::pool pool{options()};
  std::atomic<int> ran{0};
  {
    weft::task_group g{pool};
    for (int i = 0; i < 10; ++i) {
      g.spawn([&] {
        std::this_thread::sleep_for(1ms);
        ran.fetch_add(1);
      });
    }
    g.spawn([] { throw std::logic_error("never waited for"); });
  }
  EXPECT_GE(ran.load(), 0);
  EXPECT_THROW(pool.wait(), std::logic_error);
}

TEST_P(group_test, waiting_thread_is_woken_by_the_last_job) {
  // Many short rounds where an outside thread blocks in wait() while the
  // last job finishes at a random moment: a lost wake-up hangs here.
  weft::pool pool{options()};
  const std::size_t rounds = weft::test::scaled(2000, 100);
  for (std::size_t r = 0; r < rounds; ++r) {
    weft::task_group g{pool};
    std::atomic<int> n{0};
    g.spawn([&, r] {
      if (r % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds{r % 50});
      n.fetch_add(1);
    });
    g.wait();
    ASSERT_EQ(n.load(), 1);
  }
}

using weft::test::wait_for;

TEST_P(group_test, several_threads_waiting_on_one_group_all_return) {
  // Three outside threads block in wait() on one group while its job ends
  // at a random moment. The group had one slot for a blocked waiter: the
  // last to block took it, and the others were never woken.
  weft::pool pool{options()};
  const std::size_t rounds = weft::test::scaled(200, 20);
  std::mt19937 random{11};
  for (std::size_t r = 0; r < rounds; ++r) {
    // On the heap: a waiter that never returns keeps a reference to it, so
    // a failed round leaks the group rather than free it under that thread.
    auto g = std::make_unique<weft::task_group>(pool);
    std::atomic<int> ran{0};
    const auto pause = std::chrono::microseconds{200 + random() % 800};
    g->spawn([&ran, pause] {
      std::this_thread::sleep_for(pause);
      ran.fetch_add(1);
    });
    constexpr int waiters = 3;
    std::array<std::atomic<bool>, waiters> returned{};
    std::vector<std::thread> threads;
    for (int i = 0; i < waiters; ++i) {
      threads.emplace_back([&group = *g, &ran, flag = &returned[static_cast<std::size_t>(i)]] {
        group.wait();
        EXPECT_EQ(ran.load(), 1);
        flag->store(true);
      });
    }
    bool all = true;
    for (const auto& flag : returned) all = wait_for(flag) && all;
    if (!all) {
      for (auto& t : threads) t.detach();
      (void)g.release();
      FAIL() << "round " << r << ": a thread in wait() was never woken";
    }
    for (auto& t : threads) t.join();
  }
}

TEST_P(group_test, a_job_that_waits_for_its_own_group_is_refused) {
  // The job is counted in the group, so a wait() inside it could never
  // return: it hung. Each kind of job a group makes: a heap job spawned
  // from outside, one kept in the group by its home worker, and a heap
  // job the home spawns when its callable is too big for a slot.
  weft::pool pool{options()};
  auto waits_for_own_group = [](weft::task_group& g, std::atomic<int>& refused) {
    try {
      g.wait();
    } catch (const weft::usage_error& e) {
      EXPECT_NE(std::string{e.what()}.find("own jobs"), std::string::npos) << e.what();
      refused.fetch_add(1);
    }
  };
  std::atomic<int> refused{0};
  {
    weft::task_group g{pool};
    g.spawn([&] { waits_for_own_group(g, refused); });
    g.wait();
  }
  pool.submit([&] {
        weft::task_group g{pool};
        g.spawn([&] { waits_for_own_group(g, refused); });
        const std::array<char, 256> big{};
        g.spawn([&, big] {
          EXPECT_EQ(big[0], 0);
          waits_for_own_group(g, refused);
        });
        g.wait();
      })
      .get();
  EXPECT_EQ(refused.load(), 3);
}

TEST_P(group_test, a_worker_waiting_for_a_long_job_elsewhere_wakes_when_it_ends) {
  // A worker whose wait() finds nothing to run naps; the job that finishes
  // on another worker wakes it (docs/waiting.md, "A worker's wait that finds
  // nothing to run"). With the backoff's pauses scaled to seconds, a wait
  // that slept them out would return long after the job's end. Both kinds
  // of group: made on the waiting worker (its home), and made outside.
  if (GetParam() < 2) GTEST_SKIP() << "needs two workers";
  weft::pool pool{options()};
  const weft::test::backoff_sleep_scaled scaled{10'000};  // 50 us -> 0.5 s
  using clock = std::chrono::steady_clock;
  struct long_job {
    std::atomic<bool>* started;
    clock::time_point* ended;
    void operator()() const {
      started->store(true);
      std::this_thread::sleep_for(600ms);
      *ended = clock::now();
    }
  };
  {
    SCOPED_TRACE("a group made on the waiting worker");
    const auto late = pool.submit([&] {
                            // Let the other workers go idle, so that they
                            // are offered the spawn at once.
                            EXPECT_TRUE(weft::test::wait_for_an_idle_worker(pool));
                            weft::task_group g{pool};
                            std::atomic<bool> started{false};
                            clock::time_point ended;
                            g.spawn(long_job{&started, &ended});
                            EXPECT_TRUE(wait_for(started)) << "no other worker took the job";
                            g.wait();
                            return clock::now() - ended;
                          })
                          .get();
    EXPECT_LT(late, 300ms);
  }
  {
    SCOPED_TRACE("a group made outside, waited for on a worker");
    weft::task_group g{pool};
    std::atomic<bool> started{false};
    clock::time_point ended;
    g.spawn(long_job{&started, &ended});
    ASSERT_TRUE(wait_for(started));
    const auto late = pool.submit([&] {
                            g.wait();
                            return clock::now() - ended;
                          })
                          .get();
    EXPECT_LT(late, 300ms);
  }
}

// Two jobs meet when both run at once: meet() returns true once another
// job has called it too, or false after `limit`.
class meeting_point {
 public:
  bool meet(std::chrono::seconds limit) {
    std::unique_lock lock{mutex_};
    if (waiting_) {
      waiting_ = false;
      ++meetings_;
      met_.notify_all();
      return true;
    }
    waiting_ = true;
    const long before = meetings_;
    if (met_.wait_for(lock, limit, [&] { return meetings_ != before; })) return true;
    waiting_ = false;
    return false;
  }

 private:
  std::mutex mutex_;
  std::condition_variable met_;
  bool waiting_ = false;
  long meetings_ = 0;
};

TEST_P(group_test, a_fan_out_from_a_worker_reaches_the_other_workers) {
  // A job spawns many jobs into a group and waits: the other workers must
  // get a share (docs/deque.md, "Idle workers"). Every job waits until
  // another job runs beside it, which on 2 workers only happens if the
  // other worker takes a share; with the jobs kept private it would wait in
  // vain.
  if (GetParam() < 2) GTEST_SKIP() << "needs two jobs running at once";
  weft::pool pool{options()};
  const std::size_t rounds = weft::test::scaled(50, 5);
  for (std::size_t r = 0; r < rounds; ++r) {
    meeting_point point;
    std::atomic<int> alone{0};
    std::atomic<int> ran{0};
    pool.submit([&] {
          weft::task_group g{pool};
          for (int i = 0; i < 16; ++i) {
            g.spawn([&] {
              // After one lonely job, the rest need not wait their 10 s.
              if (alone.load() == 0 && !point.meet(std::chrono::seconds{10})) alone.fetch_add(1);
              ran.fetch_add(1);
            });
          }
          g.wait();
        })
        .get();
    ASSERT_EQ(ran.load(), 16);
    ASSERT_EQ(alone.load(), 0) << "round " << r << ": a job found no other running beside it";
  }
}

TEST(group_home, jobs_spawned_while_workers_are_idle_are_theirs_at_once) {
  // Seed 000's pattern of forking two pieces and computing a third: a job
  // spawns two jobs into a group, and before its wait() it needs both to
  // be running. With idle workers about, the spawns must be theirs at once,
  // not wait for the spawner's wait() (docs/deque.md, "Idle workers"). The
  // spawner first waits for another worker to be idle (searching or
  // asleep); group_liveness covers workers that are busy at the spawn.
  weft::pool pool{{.threads = 3}};
  const std::size_t rounds = weft::test::scaled(50, 5);
  for (std::size_t r = 0; r < rounds; ++r) {
    std::atomic<int> started{0};
    std::atomic<bool> release{false};
    const bool both = pool.submit([&] {
                            std::this_thread::sleep_for(20ms);
                            EXPECT_TRUE(weft::test::wait_for_an_idle_worker(pool));
                            weft::task_group g{pool};
                            for (int i = 0; i < 2; ++i) {
                              g.spawn([&] {
                                started.fetch_add(1);
                                while (!release.load()) std::this_thread::yield();
                              });
                            }
                            const auto limit =
                                std::chrono::steady_clock::now() + std::chrono::seconds{10};
                            while (started.load() < 2 && std::chrono::steady_clock::now() < limit) {
                              std::this_thread::yield();
                            }
                            const bool ok = started.load() == 2;
                            release.store(true);
                            g.wait();
                            return ok;
                          })
                          .get();
    ASSERT_TRUE(both) << "round " << r << ": a spawned job waited for the spawner's wait()";
  }
}

// Every job a group spawns is stealable by an idle worker from the moment
// spawn() returns, whatever the spawner does next (docs/deque.md, "Idle
// workers"). Run at 2, 3, 4 and 8 workers on however many CPUs there are.
class group_liveness : public ::testing::TestWithParam<std::size_t> {};

// Gives up after 10 s, so that a hidden job fails the test instead of
// hanging it: true if cond() held by then.
template <class Cond>
bool spin_until(Cond cond) {
  const auto limit = std::chrono::steady_clock::now() + 10s;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > limit) return false;
    std::this_thread::yield();
  }
  return true;
}

// Holds every worker of `pool` but the calling one in a spin: the spawns the
// caller makes meanwhile find no worker idle. release() lets them go; the
// destructor waits until every held job has returned (they read the holder).
class hold_the_others {
 public:
  explicit hold_the_others(weft::pool& pool) {
    const std::size_t me = weft::this_worker::index().value();
    for (std::size_t i = 0; i < pool.size(); ++i) {
      if (i == me) continue;
      holds_.push_back(pool.submit_on(i, [this] {
        held_.fetch_add(1);
        while (!release_.load()) std::this_thread::yield();
      }));
    }
    held_all_ = spin_until([this] { return held_.load() == holds_.size(); });
  }
  hold_the_others(const hold_the_others&) = delete;
  hold_the_others& operator=(const hold_the_others&) = delete;
  ~hold_the_others() {
    release();
    for (auto& h : holds_) h.get();
  }
  void release() { release_ = true; }
  [[nodiscard]] bool held_all() const { return held_all_; }

 private:
  std::atomic<bool> release_{false};
  std::atomic<std::size_t> held_{0};
  std::vector<weft::future<void>> holds_;
  bool held_all_ = false;
};

// Taskflow's TaskGroup.Cancellation shape: a job spawns W-1 group jobs that
// spin until all W have arrived, and spins itself (without waiting on the
// group) until they have. The other workers are busy at the spawns and
// free right after, as when the previous round's jobs are still ending.
TEST_P(group_liveness, spawned_jobs_that_wait_for_each_other_and_the_spawner_all_run) {
  const std::size_t w = GetParam();
  weft::pool pool{{.threads = w}};
  const std::size_t rounds = weft::test::scaled(100, 10);
  for (std::size_t r = 0; r < rounds; ++r) {
    std::atomic<std::size_t> arrived{0};
    std::atomic<int> gave_up{0};
    pool.submit([&] {
          hold_the_others others{pool};
          EXPECT_TRUE(others.held_all());
          weft::task_group g{pool};
          for (std::size_t i = 0; i + 1 < w; ++i) {
            g.spawn([&] {
              arrived.fetch_add(1);
              if (!spin_until([&] { return arrived.load() >= w; })) gave_up.fetch_add(1);
            });
          }
          others.release();
          arrived.fetch_add(1);
          if (!spin_until([&] { return arrived.load() >= w; })) gave_up.fetch_add(1);
          g.cancel();
          g.wait();
        })
        .get();
    ASSERT_EQ(gave_up.load(), 0) << "round " << r << ": a spawned job stayed hidden";
  }
}

TEST_P(group_liveness, a_spawner_blocked_on_a_condition_variable_is_signalled_by_its_job) {
  // The spawner blocks outside weft until its job signals it: another
  // worker, busy at the spawn and free right after, must take the job.
  weft::pool pool{{.threads = GetParam()}};
  const std::size_t rounds = weft::test::scaled(20, 5);
  for (std::size_t r = 0; r < rounds; ++r) {
    const bool signalled = pool.submit([&] {
                                 hold_the_others others{pool};
                                 EXPECT_TRUE(others.held_all());
                                 std::mutex m;
                                 std::condition_variable cv;
                                 bool done = false;
                                 weft::task_group g{pool};
                                 // The first spawn finds the deque's public
                                 // part empty and goes there at once; the
                                 // second is the one that must not hide.
                                 g.spawn([] {});
                                 g.spawn([&] {
                                   const std::lock_guard lock{m};
                                   done = true;
                                   cv.notify_one();
                                 });
                                 others.release();
                                 bool ok = false;
                                 {
                                   std::unique_lock lock{m};
                                   ok = cv.wait_for(lock, 10s, [&] { return done; });
                                 }
                                 g.wait();
                                 return ok;
                               })
                               .get();
    ASSERT_TRUE(signalled) << "round " << r << ": the spawned job waited for the spawner";
  }
}

TEST_P(group_liveness, jobs_run_elsewhere_while_their_spawner_computes) {
  // The spawner computes for 100 ms after two spawns; both must run on the
  // other workers meanwhile, not wait for its wait().
  weft::pool pool{{.threads = GetParam()}};
  const std::size_t rounds = weft::test::scaled(5, 2);
  for (std::size_t r = 0; r < rounds; ++r) {
    const int ran_meanwhile = pool.submit([&] {
                                    hold_the_others others{pool};
                                    EXPECT_TRUE(others.held_all());
                                    std::atomic<int> ran{0};
                                    weft::task_group g{pool};
                                    g.spawn([&] { ran.fetch_add(1); });
                                    g.spawn([&] { ran.fetch_add(1); });
                                    others.release();
                                    const auto until = std::chrono::steady_clock::now() + 100ms;
                                    while (std::chrono::steady_clock::now() < until) {
                                    }
                                    const int seen = ran.load();
                                    g.wait();
                                    return seen;
                                  })
                                  .get();
    ASSERT_EQ(ran_meanwhile, 2) << "round " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(workers, group_liveness, ::testing::Values(2, 3, 4, 8),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

TEST_P(group_test, a_group_made_on_a_worker_can_be_waited_for_from_outside) {
  // The group's home is the worker that made it; the main thread waits for
  // it and destroys it, while its jobs (and the jobs they spawn into it from
  // whichever thread runs them) finish at random moments.
  weft::pool pool{options()};
  const std::size_t rounds = weft::test::scaled(200, 20);
  std::mt19937 random{7};
  for (std::size_t r = 0; r < rounds; ++r) {
    std::optional<weft::task_group> g;
    std::atomic<int> ran{0};
    const auto pause = std::chrono::microseconds{random() % 200};
    pool.submit([&] {
          g.emplace(pool);
          for (int i = 0; i < 8; ++i) {
            g->spawn([&, i] {
              if (i % 3 == 0) std::this_thread::sleep_for(pause);
              g->spawn([&] { ran.fetch_add(1); });
              ran.fetch_add(1);
            });
          }
          if (r % 2 == 0) g->spawn([] { throw std::runtime_error("from the home"); });
        })
        .get();
    if (r % 2 == 0) {
      // The exception cancels the jobs that had not started yet.
      EXPECT_THROW(g->wait(), std::runtime_error);
      ASSERT_LE(ran.load(), 16) << "round " << r;
    } else {
      g->wait();
      ASSERT_EQ(ran.load(), 16) << "round " << r;
    }
    g.reset();
  }
}

TEST_P(group_test, the_home_waits_for_jobs_other_threads_spawn_into_its_group) {
  // Spawns from the home (counted with plain stores) and from other threads
  // (counted in the shared word) mix in one group; the home's wait() must
  // see all of them, nested ones included, whichever thread finishes last.
  weft::pool pool{options()};
  const std::size_t rounds = weft::test::scaled(300, 30);
  for (std::size_t r = 0; r < rounds; ++r) {
    std::atomic<int> ran{0};
    std::thread outsider;
    pool.submit([&] {
          weft::task_group g{pool};
          std::atomic<bool> outsider_done{false};
          outsider = std::thread([&] {
            for (int i = 0; i < 4; ++i) g.spawn([&] { ran.fetch_add(1); });
            outsider_done.store(true);
          });
          for (int i = 0; i < 4; ++i) {
            g.spawn([&] {
              weft::task_group inner{pool};
              inner.spawn([&] { g.spawn([&] { ran.fetch_add(1); }); });
              inner.wait();
              ran.fetch_add(1);
            });
          }
          // The outsider's spawns count only once it has made them.
          while (!outsider_done.load()) std::this_thread::yield();
          g.wait();
          EXPECT_EQ(ran.load(), 12) << "round " << r;
        })
        .get();
    outsider.join();
  }
}

// ---------------------------------------------------------------------------
// run_and_wait

int fib_run_and_wait(weft::pool& pool, int n) {
  if (n < 2) return n;
  int a = 0;
  int b = 0;
  weft::task_group g{pool};
  g.spawn([&] { a = fib_run_and_wait(pool, n - 1); });
  g.run_and_wait([&] { b = fib_run_and_wait(pool, n - 2); });
  return a + b;
}

TEST_P(group_test, run_and_wait_runs_its_callable_here_and_waits_for_the_rest) {
  weft::pool pool{options()};
  for (const bool from_a_job : {false, true}) {
    auto body = [&] {
      weft::task_group g{pool};
      std::atomic<int> spawned_ran{0};
      for (int i = 0; i < 100; ++i) g.spawn([&] { spawned_ran.fetch_add(1); });
      std::thread::id ran_on;
      g.run_and_wait([&] { ran_on = std::this_thread::get_id(); });
      EXPECT_EQ(ran_on, std::this_thread::get_id());
      EXPECT_EQ(spawned_ran.load(), 100) << "run_and_wait() returned before the group's jobs";
    };
    if (from_a_job) {
      pool.submit(body).get();
    } else {
      body();
    }
  }
  EXPECT_EQ(fib_run_and_wait(pool, 16), 987);
  EXPECT_EQ(pool.submit([&] { return fib_run_and_wait(pool, 18); }).get(), 2584);
}

TEST_P(group_test, run_and_wait_rethrows_and_is_skipped_in_a_cancelled_group) {
  weft::pool pool{options()};
  pool.submit([&] {
        weft::task_group g{pool};
        std::atomic<int> ran{0};
        g.spawn([&] { ran.fetch_add(1); });
        EXPECT_THROW(g.run_and_wait([] { throw std::logic_error("here"); }), std::logic_error);
        EXPECT_FALSE(g.is_cancelled()) << "the group is fresh after the rethrow";
        EXPECT_LE(ran.load(), 1);
        // A job's exception that came first wins, and f is skipped.
        g.spawn([] { throw std::runtime_error("spawned"); });
        // With another worker, it takes the failing job: a public push
        // publishes the private items below it (docs/deque.md).
        const bool elsewhere = GetParam() >= 2;
        if (elsewhere) {
          pool.spawn([] {});
          while (!g.is_cancelled()) std::this_thread::yield();
        }
        bool ran_here = false;
        EXPECT_THROW(g.run_and_wait([&] { ran_here = true; }), std::runtime_error);
        // Else the failing job runs inside the wait, after f.
        EXPECT_EQ(ran_here, !elsewhere);
        g.cancel();
        bool ran_cancelled = false;
        g.run_and_wait([&] { ran_cancelled = true; });
        EXPECT_FALSE(ran_cancelled) << "f ran in a cancelled group";
      })
      .get();
}

TEST(group_sequential, run_and_wait_runs_its_callable_before_the_jobs_spawned_so_far) {
  weft::pool pool{{.threads = 0}};
  weft::task_group g{pool};
  std::vector<int> order;
  g.spawn([&] { order.push_back(1); });
  g.spawn([&] { order.push_back(2); });
  g.run_and_wait([&] { order.push_back(0); });
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

// ---------------------------------------------------------------------------
// The home's first spawns live in the group (task_group::slot)

TEST_P(group_test, jobs_kept_in_the_group_are_stolen_reused_and_mixed_with_heap_jobs) {
  // The first two spawns of the home between waits live in the group; the
  // rest, and callables too big for a slot, are heap jobs. Thieves take
  // slots at random moments, jobs throw at random, and the group is reused
  // round after round: every job runs once, or is skipped after a failure.
  weft::pool pool{options()};
  const std::size_t rounds = weft::test::scaled(300, 30);
  std::mt19937 random{11};
  for (std::size_t r = 0; r < rounds; ++r) {
    const auto pause = std::chrono::microseconds{random() % 50};
    const int spawns = 1 + static_cast<int>(random() % 5);
    const int failing = static_cast<int>(random() % 8);  // >= spawns: none fails
    pool.submit([&] {
          weft::task_group g{pool};
          for (int round = 0; round < 3; ++round) {
            std::atomic<int> ran{0};
            for (int i = 0; i < spawns; ++i) {
              if (i % 2 == 0) {
                g.spawn([&, i] {
                  if (i == 0) std::this_thread::sleep_for(pause);
                  ran.fetch_add(1);
                  if (i == failing) throw std::runtime_error("slot");
                });
              } else {
                std::array<char, 256> big{};  // too big for a slot
                big[0] = 1;
                g.spawn([&, i, big] {
                  ran.fetch_add(big[0]);
                  if (i == failing) throw std::runtime_error("heap");
                });
              }
            }
            if (failing < spawns) {
              EXPECT_THROW(g.wait(), std::runtime_error);
              ASSERT_LE(ran.load(), spawns);
            } else {
              g.wait();
              ASSERT_EQ(ran.load(), spawns) << "round " << r;
            }
          }
        })
        .get();
  }
}

TEST_P(group_test, a_wide_fan_out_past_the_slots_is_stolen_thrown_and_reused) {
  // Spawns past the group's two slots live in heap jobs of the home's
  // cache (issue 43): wide fans, with a thrower at random, thieves taking
  // them at random moments, the group reused round after round.
  weft::pool pool{options()};
  const std::size_t rounds = weft::test::scaled(200, 20);
  std::mt19937 random{43};
  for (std::size_t r = 0; r < rounds; ++r) {
    const int spawns = 3 + static_cast<int>(random() % 30);
    const int failing = static_cast<int>(random() % 64);  // >= spawns: none fails
    const auto pause = std::chrono::microseconds{random() % 20};
    pool.submit([&] {
          weft::task_group g{pool};
          for (int round = 0; round < 3; ++round) {
            std::vector<std::atomic<int>> ran(static_cast<std::size_t>(spawns));
            for (int i = 0; i < spawns; ++i) {
              g.spawn([&ran, i, failing, pause] {
                if (i % 5 == 0) std::this_thread::sleep_for(pause);
                ran[static_cast<std::size_t>(i)].fetch_add(1);
                if (i == failing) throw std::runtime_error("cached");
              });
            }
            if (failing < spawns) {
              EXPECT_THROW(g.wait(), std::runtime_error);
              for (auto& n : ran) ASSERT_LE(n.load(), 1);
            } else {
              EXPECT_EQ(g.wait(), weft::group_status::complete);
              for (auto& n : ran) ASSERT_EQ(n.load(), 1) << "round " << r;
            }
          }
        })
        .get();
  }
}

// A callable whose copy throws on the nth copy of all.
struct throwing_copy {
  std::atomic<int>* copies;
  int throw_at;
  std::atomic<int>* ran;
  throwing_copy(std::atomic<int>* c, int t, std::atomic<int>* r) : copies(c), throw_at(t), ran(r) {}
  throwing_copy(const throwing_copy& o) : copies(o.copies), throw_at(o.throw_at), ran(o.ran) {
    if (copies->fetch_add(1) + 1 == throw_at) throw std::length_error("copy");
  }
  throwing_copy& operator=(const throwing_copy&) = delete;
  ~throwing_copy() = default;
  void operator()() const { ran->fetch_add(1); }
};

TEST_P(group_test, a_spawn_whose_copy_throws_past_the_slots_leaves_the_group_whole) {
  // The copy into a cached slot throws: the heap job goes back to the
  // cache, nothing is counted, and the group goes on.
  weft::pool pool{options()};
  for (int at = 1; at <= 6; ++at) {
    const int ran = pool.submit([&pool, at] {
                          std::atomic<int> copies{0};
                          std::atomic<int> runs{0};
                          const throwing_copy f{&copies, at, &runs};
                          weft::task_group g{pool};
                          int thrown = 0;
                          for (int i = 0; i < 6; ++i) {
                            try {
                              g.spawn(f);
                            } catch (const std::length_error&) {
                              ++thrown;
                            }
                          }
                          EXPECT_EQ(thrown, 1);
                          EXPECT_EQ(g.wait(), weft::group_status::complete);
                          for (int i = 0; i < 40; ++i) g.spawn([&runs] { runs.fetch_add(1); });
                          g.wait();
                          return runs.load();
                        })
                        .get();
    EXPECT_EQ(ran, 5 + 40) << "copy " << at << " threw";
  }
}

// A job's spawns into its group wait in its worker's deque (spawn(pool, g,
// ran) makes them and returns how many jobs it queued, a pool.spawn() among
// them counted); purge() drops them once they are public, and the group's
// wait() throws job_cancelled.
template <class Spawn>
void expect_purge_drops_a_groups_jobs(Spawn spawn) {
  weft::pool pool{{.threads = 2}};
  std::atomic<bool> started{false};
  std::atomic<bool> paused{false};
  std::atomic<std::size_t> spawned{0};
  std::atomic<bool> purged{false};
  std::atomic<int> ran{0};
  auto job = pool.submit([&] {
    started.store(true);
    while (!paused.load()) std::this_thread::yield();
    weft::task_group g{pool};
    spawned.store(spawn(pool, g, ran));
    while (!purged.load()) std::this_thread::yield();
    try {
      g.wait();
    } catch (const weft::job_cancelled&) {
      return true;
    }
    return false;
  });
  while (!started.load()) std::this_thread::yield();  // a paused pool would not start it
  pool.pause();
  paused.store(true);
  while (spawned.load() == 0) std::this_thread::yield();
  EXPECT_EQ(pool.purge(), spawned.load());
  purged.store(true);
  pool.resume();
  EXPECT_TRUE(job.get()) << "wait() did not report the dropped jobs";
  EXPECT_EQ(ran.load(), 0);
}

TEST(group_slots, purge_drops_jobs_kept_in_the_group) {
  expect_purge_drops_a_groups_jobs(
      [](weft::pool& pool, weft::task_group& g, std::atomic<int>& ran) {
        std::atomic<int>* r = &ran;  // lives in the caller's frame
        g.spawn([r] { r->fetch_add(1); });
        g.spawn([r] { r->fetch_add(1); });
        pool.spawn([r] { r->fetch_add(1); });  // a public push publishes the two below it
        return std::size_t{3};
      });
}

TEST(group_slots, purge_drops_jobs_kept_in_the_cache) {
  // Past the group's two slots: those in the home's cache go too.
  expect_purge_drops_a_groups_jobs(
      [](weft::pool& /*pool*/, weft::task_group& g, std::atomic<int>& ran) {
        std::atomic<int>* r = &ran;  // lives in the caller's frame
        for (int i = 0; i < 5; ++i) g.spawn([r] { r->fetch_add(1); });
        return std::size_t{5};
      });
}

INSTANTIATE_TEST_SUITE_P(workers, group_test, ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
