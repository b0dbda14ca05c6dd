// Pool control (docs/control.md): pause, resume and purge; priorities;
// spawn_on/submit_on; bounded submission and its overflow policies;
// weft::job.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;

// Worker counts of the parallel pools these features need.
const std::vector<std::size_t> parallel_counts{1, 2, 4, 8};

std::string name_of(const ::testing::TestParamInfo<std::size_t>& info) {
  return weft::test::workers_name(info.param);
}

// Order of the jobs one worker ran.
struct order_log {
  std::mutex mutex;
  std::vector<char> seen;
  void add(char c) {
    std::lock_guard lock{mutex};
    seen.push_back(c);
  }
  std::string str() {
    std::lock_guard lock{mutex};
    return {seen.begin(), seen.end()};
  }
};

// ---------------------------------------------------------------------------
// pause and resume

class control_at : public ::testing::TestWithParam<std::size_t> {};

TEST_P(control_at, a_paused_pool_starts_nothing_until_resumed) {
  weft::pool pool{{.threads = GetParam()}};
  std::atomic<int> ran{0};
  pool.pause();
  EXPECT_TRUE(pool.paused());
  constexpr int jobs = 100;
  for (int i = 0; i < jobs; ++i) pool.spawn([&] { ran.fetch_add(1); });
  auto f = pool.submit([] { return 7; });
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(ran.load(), 0);
  EXPECT_EQ(f.wait_for(0ms), std::future_status::timeout);
  pool.resume();
  EXPECT_FALSE(pool.paused());
  EXPECT_EQ(f.get(), 7);
  pool.wait();
  EXPECT_EQ(ran.load(), jobs);
}

TEST_P(control_at, pause_lets_running_jobs_finish_and_wait_returns_after_resume) {
  weft::pool pool{{.threads = GetParam()}};
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  std::atomic<int> after{0};
  pool.spawn([&] {
    started.store(true);
    while (!release.load()) std::this_thread::yield();
  });
  while (!started.load()) std::this_thread::yield();
  pool.pause();
  pool.pause();  // twice: nothing more
  for (int i = 0; i < 10; ++i) pool.spawn([&] { after.fetch_add(1); });
  release.store(true);
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(after.load(), 0);
  EXPECT_FALSE(pool.wait_for(5ms));
  pool.resume();
  pool.resume();  // twice: nothing more
  pool.wait();
  EXPECT_EQ(after.load(), 10);
}

TEST_P(control_at, a_paused_pool_is_destroyed_with_its_work_done) {
  std::atomic<int> ran{0};
  {
    weft::pool pool{{.threads = GetParam()}};
    pool.pause();
    for (int i = 0; i < 50; ++i) pool.spawn([&] { ran.fetch_add(1); });
  }
  EXPECT_EQ(ran.load(), 50);
}

TEST_P(control_at, pause_and_resume_race_with_submissions_and_lose_nothing) {
  weft::pool pool{{.threads = GetParam()}};
  const std::size_t rounds = weft::test::scaled(200, 10);
  std::atomic<std::size_t> ran{0};
  std::atomic<bool> stop{false};
  std::thread toggler([&] {
    std::mt19937 rng{17};
    while (!stop.load()) {
      pool.pause();
      std::this_thread::sleep_for(std::chrono::microseconds{rng() % 200});
      pool.resume();
      std::this_thread::sleep_for(std::chrono::microseconds{rng() % 200});
    }
  });
  std::size_t sent = 0;
  for (std::size_t r = 0; r < rounds; ++r) {
    std::vector<weft::future<int>> fs;
    for (int i = 0; i < 20; ++i) {
      pool.spawn([&] { ran.fetch_add(1); });
      fs.push_back(pool.submit([i] { return i; }));
      sent += 1;
    }
    for (int i = 0; i < 20; ++i) EXPECT_EQ(fs[static_cast<std::size_t>(i)].get(), i);
  }
  stop.store(true);
  toggler.join();
  pool.resume();
  pool.wait();
  EXPECT_EQ(ran.load(), sent);
}

TEST(control, pause_in_sequential_mode_is_a_usage_error) {
  weft::pool pool{{.threads = 0}};
  EXPECT_THROW(pool.pause(), weft::usage_error);
  EXPECT_FALSE(pool.paused());
  pool.resume();  // nothing to resume
}

// ---------------------------------------------------------------------------
// purge

TEST_P(control_at, purge_drops_queued_jobs_futures_and_group_jobs) {
  weft::pool pool{{.threads = GetParam()}};
  std::atomic<int> ran{0};
  pool.pause();
  constexpr int detached = 30;
  for (int i = 0; i < detached; ++i) pool.spawn([&] { ran.fetch_add(1); });
  std::vector<weft::future<int>> fs;
  for (int i = 0; i < 10; ++i) fs.push_back(pool.submit([&] { return ran.fetch_add(1); }));
  weft::task_group tg{pool};
  for (int i = 0; i < 5; ++i) tg.spawn([&] { ran.fetch_add(1); });
  pool.spawn_all(std::vector<std::function<void()>>(4, [&] { ran.fetch_add(1); }));
  const std::size_t dropped = pool.purge();
  // A worker that was taking a job just as pause() returned (its first look
  // came before it) drops that job itself, when it sees the pause: such a
  // job is not in purge()'s count, but is in stats().cancelled.
  constexpr std::size_t all = detached + 10 + 5 + 4;
  EXPECT_LE(dropped, all);
  for (auto& f : fs) EXPECT_THROW(f.get(), weft::job_cancelled);
  EXPECT_THROW(tg.wait(), weft::job_cancelled);
  pool.wait();  // returns though paused: nothing is left
  EXPECT_EQ(pool.stats().cancelled, all);
  pool.resume();
  pool.wait();
  EXPECT_EQ(ran.load(), 0);
  // The pool works on.
  EXPECT_EQ(pool.submit([] { return 1; }).get(), 1);
}

TEST_P(control_at, purge_keeps_what_other_front_ends_queued) {
  weft::pool pool{{.threads = GetParam()}};
  std::atomic<int> ran{0};
  weft::graph g;
  auto a = g.emplace([&] { ran.fetch_add(1); });
  auto b = g.emplace([&] { ran.fetch_add(1); });
  a.precede(b);
  pool.pause();
  auto run = pool.run(g);
  auto scoped = weft::submit_scoped(pool, [&](weft::scope& s) {
    s.spawn([&] { ran.fetch_add(1); });
    return 5;
  });
  pool.spawn([&] { ran.fetch_add(100); });
  // At most the spawn; a worker that took it as the pool paused drops it
  // itself (counted in stats only).
  EXPECT_LE(pool.purge(), 1U);
  pool.resume();
  run.get();
  EXPECT_EQ(scoped.get(), 5);
  pool.wait();
  EXPECT_EQ(ran.load(), 3);
  EXPECT_EQ(pool.stats().cancelled, 1U);
}

TEST_P(control_at, purge_on_a_running_pool_drops_or_runs_each_job_once) {
  weft::pool pool{{.threads = GetParam()}};
  const std::size_t rounds = weft::test::scaled(50, 5);
  for (std::size_t r = 0; r < rounds; ++r) {
    std::atomic<int> ran{0};
    std::vector<weft::future<int>> fs;
    constexpr int jobs = 200;
    for (int i = 0; i < jobs; ++i) fs.push_back(pool.submit([&] { return ran.fetch_add(1); }));
    const std::size_t dropped = pool.purge();
    std::size_t cancelled = 0;
    for (auto& f : fs) {
      try {
        (void)f.get();
      } catch (const weft::job_cancelled&) {
        ++cancelled;
      }
    }
    pool.wait();
    EXPECT_EQ(cancelled, dropped);
    EXPECT_EQ(static_cast<std::size_t>(ran.load()) + dropped, std::size_t{jobs});
  }
}

TEST(control, purge_in_sequential_mode_drops_the_queue) {
  weft::pool pool{{.threads = 0}};
  std::atomic<int> ran{0};
  for (int i = 0; i < 5; ++i) pool.spawn([&] { ran.fetch_add(1); });
  auto f = pool.submit([] { return 1; });
  EXPECT_EQ(pool.purge(), 6U);
  EXPECT_THROW(f.get(), weft::job_cancelled);
  pool.wait();
  EXPECT_EQ(ran.load(), 0);
}

// ---------------------------------------------------------------------------
// priorities

TEST(control, priorities_order_the_jobs_of_a_resumed_pool) {
  weft::pool pool{{.threads = 1}};
  order_log log;
  pool.pause();
  for (int i = 0; i < 3; ++i) {
    pool.spawn(weft::priority::low, [&] { log.add('L'); });
    pool.spawn([&] { log.add('N'); });
    pool.spawn(weft::priority::normal, [&] { log.add('N'); });
    pool.spawn(weft::priority::high, [&] { log.add('H'); });
  }
  auto f = pool.submit(weft::priority::high, [&] {
    log.add('H');
    return 1;
  });
  pool.resume();
  EXPECT_EQ(f.get(), 1);
  pool.wait();
  EXPECT_EQ(log.str(), "HHHHNNNNNNLLL");
}

TEST(control, every_eighth_pick_goes_to_a_normal_job) {
  weft::pool pool{{.threads = 1}};
  order_log log;
  pool.pause();
  for (int i = 0; i < 16; ++i) pool.spawn(weft::priority::high, [&] { log.add('H'); });
  for (int i = 0; i < 2; ++i) pool.spawn([&] { log.add('N'); });
  pool.resume();
  pool.wait();
  EXPECT_EQ(log.str(), "HHHHHHHNHHHHHHHNHH");
}

TEST(control, a_stream_of_high_jobs_does_not_starve_normal_or_low_ones) {
  weft::pool pool{{.threads = 1}};
  std::atomic<int> highs{0};
  std::atomic<int> normal_at{-1};
  std::atomic<int> low_at{-1};
  constexpr int stream = 1000;
  std::function<void()> high = [&] {
    if (highs.fetch_add(1) + 1 < stream) pool.spawn(weft::priority::high, high);
  };
  pool.pause();
  pool.spawn(weft::priority::high, high);
  pool.spawn(weft::priority::high, high);  // two in the queue at all times
  pool.spawn([&] { normal_at.store(highs.load()); });
  pool.spawn(weft::priority::low, [&] { low_at.store(highs.load()); });
  pool.resume();
  pool.wait();
  EXPECT_GE(normal_at.load(), 0);
  EXPECT_LT(normal_at.load(), 10);
  EXPECT_GE(low_at.load(), 0);
  EXPECT_LT(low_at.load(), 100);
}

TEST_P(control_at, prioritised_jobs_all_run_under_load) {
  weft::pool pool{{.threads = GetParam()}};
  const int per_priority = static_cast<int>(weft::test::scaled(3000, 100));
  std::atomic<int> ran{0};
  std::vector<std::thread> senders;
  for (auto p : {weft::priority::low, weft::priority::normal, weft::priority::high}) {
    senders.emplace_back([&, p] {
      for (int i = 0; i < per_priority; ++i) pool.spawn(p, [&] { ran.fetch_add(1); });
    });
  }
  auto inner = pool.submit([&] {
    for (int i = 0; i < per_priority; ++i)
      pool.spawn(weft::priority::high, [&] { ran.fetch_add(1); });
  });
  for (auto& t : senders) t.join();
  inner.get();
  pool.wait();
  EXPECT_EQ(ran.load(), 4 * per_priority);
}

// ---------------------------------------------------------------------------
// spawn_on / submit_on

TEST_P(control_at, submit_on_runs_on_the_chosen_worker_only) {
  const std::size_t workers = GetParam();
  weft::pool pool{{.threads = workers}};
  const std::size_t rounds = weft::test::scaled(200, 10);
  for (std::size_t r = 0; r < rounds; ++r) {
    std::vector<weft::future<std::size_t>> fs;
    for (std::size_t i = 0; i < workers; ++i) {
      fs.push_back(pool.submit_on(i, [] { return weft::this_worker::index().value_or(99); }));
    }
    for (std::size_t i = 0; i < workers; ++i) EXPECT_EQ(fs[i].get(), i);
    if (r % 16 == 0) std::this_thread::sleep_for(2ms);  // let the workers fall asleep
  }
  std::atomic<std::size_t> wrong{0};
  for (std::size_t i = 0; i < workers; ++i) {
    for (int k = 0; k < 50; ++k) {
      pool.spawn_on(i, [&wrong, i] {
        if (weft::this_worker::index() != i) wrong.fetch_add(1);
      });
    }
  }
  pool.wait();
  EXPECT_EQ(wrong.load(), 0U);
}

TEST_P(control_at, a_mailbox_keeps_the_order_it_was_sent_in) {
  const std::size_t workers = GetParam();
  weft::pool pool{{.threads = workers}};
  std::vector<int> seen;  // only worker workers - 1 touches it
  for (int i = 0; i < 100; ++i) pool.spawn_on(workers - 1, [&seen, i] { seen.push_back(i); });
  pool.wait();
  ASSERT_EQ(seen.size(), 100U);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
}

TEST_P(control_at, spawn_on_from_jobs_and_paused_pools) {
  const std::size_t workers = GetParam();
  weft::pool pool{{.threads = workers}};
  pool.pause();
  auto f = pool.submit_on(workers - 1, [] { return weft::this_worker::index().value_or(99); });
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(f.wait_for(0ms), std::future_status::timeout);
  pool.resume();
  EXPECT_EQ(f.get(), workers - 1);
  // From a job, to every worker (its own included).
  auto g = pool.submit([&pool, workers] {
    std::size_t sum = 0;
    for (std::size_t i = 0; i < workers; ++i) {
      sum += pool.submit_on(i, [] { return weft::this_worker::index().value_or(99); }).get();
    }
    return sum;
  });
  EXPECT_EQ(g.get(), workers * (workers - 1) / 2);
}

TEST(control, spawn_on_checks_the_worker_index) {
  weft::pool pool{{.threads = 2}};
  EXPECT_THROW(pool.spawn_on(2, [] {}), weft::usage_error);
  EXPECT_THROW((void)pool.submit_on(99, [] { return 1; }), weft::usage_error);
  weft::pool sequential{{.threads = 0}};
  EXPECT_THROW(sequential.spawn_on(0, [] {}), weft::usage_error);
  try {
    pool.spawn_on(5, [] {});
    FAIL() << "no usage_error";
  } catch (const weft::usage_error& e) {
    EXPECT_NE(std::string{e.what()}.find("workers 0 to 1"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------
// bounded submission

TEST(control, capacity_needs_workers) {
  EXPECT_THROW(weft::pool({.threads = 0, .capacity = 4}), weft::usage_error);
}

TEST(control, reject_throws_queue_full_and_queues_nothing) {
  weft::pool pool{{.threads = 2, .capacity = 4, .on_full = weft::overflow::reject}};
  std::atomic<int> ran{0};
  pool.pause();
  for (int i = 0; i < 4; ++i) pool.spawn([&] { ran.fetch_add(1); });
  EXPECT_THROW(pool.spawn([&] { ran.fetch_add(100); }), weft::queue_full);
  EXPECT_THROW((void)pool.submit([] { return 1; }), weft::queue_full);
  EXPECT_EQ(pool.stats().overflowed, 2U);
  pool.resume();
  pool.wait();
  EXPECT_EQ(ran.load(), 4);
  // Room again once they started.
  EXPECT_EQ(pool.submit([] { return 2; }).get(), 2);
}

TEST(control, block_waits_for_room) {
  weft::pool pool{{.threads = 2, .capacity = 3}};
  std::atomic<int> ran{0};
  pool.pause();
  for (int i = 0; i < 3; ++i) pool.spawn([&] { ran.fetch_add(1); });
  std::atomic<bool> sent{false};
  std::thread producer([&] {
    pool.spawn([&] { ran.fetch_add(1); });
    sent.store(true);
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(sent.load());
  pool.resume();
  producer.join();
  EXPECT_TRUE(sent.load());
  pool.wait();
  EXPECT_EQ(ran.load(), 4);
}

TEST(control, run_here_runs_on_the_submitting_thread) {
  weft::pool pool{{.threads = 2, .capacity = 2, .on_full = weft::overflow::run_here}};
  pool.pause();
  pool.spawn([] {});
  pool.spawn([] {});
  const auto me = std::this_thread::get_id();
  auto f = pool.submit([] { return std::this_thread::get_id(); });
  EXPECT_EQ(f.wait_for(0ms), std::future_status::ready);
  EXPECT_EQ(f.get(), me);
  bool here = false;
  pool.spawn([&] { here = std::this_thread::get_id() == me; });
  EXPECT_TRUE(here);
  pool.resume();
  pool.wait();
}

// A job for worker i runs on worker i only, also when it finds the bound
// reached: with run_here (or a callable) it waits for room as with block,
// rather than run on the submitting thread.
TEST(control, a_job_for_a_chosen_worker_waits_for_room_under_run_here) {
  weft::pool pool{{.threads = 2, .capacity = 1, .on_full = weft::overflow::run_here}};
  pool.pause();
  pool.spawn([] {});  // takes the only slot until resume()
  std::optional<std::size_t> spawned_on;
  std::atomic<bool> sent{false};
  std::thread producer([&] {
    pool.spawn_on(1, [&] { spawned_on = weft::this_worker::index(); });
    sent.store(true);
  });
  // The producer met the policy, and waits.
  while (pool.stats().overflowed == 0) std::this_thread::yield();
  std::this_thread::sleep_for(5ms);
  EXPECT_FALSE(sent.load());
  pool.resume();
  producer.join();
  pool.wait();
  EXPECT_EQ(spawned_on, std::optional<std::size_t>{1});

  // submit_on, and from the thread that will resume the pool's worker 0.
  pool.pause();
  pool.spawn([] {});
  std::thread resumer([&] {
    while (pool.stats().overflowed < 2) std::this_thread::yield();
    pool.resume();
  });
  auto f = pool.submit_on(0, [] { return weft::this_worker::index(); });
  EXPECT_EQ(f.get(), std::optional<std::size_t>{0});
  resumer.join();
  // A job for any worker still runs here.
  pool.pause();
  pool.spawn([] {});
  const auto me = std::this_thread::get_id();
  EXPECT_EQ(pool.submit([] { return std::this_thread::get_id(); }).get(), me);
  pool.resume();
  pool.wait();
  EXPECT_EQ(pool.stats().overflowed, 3U);
}

TEST(control, a_job_for_a_chosen_worker_is_not_handed_to_the_overflow_callable) {
  std::atomic<int> handed{0};
  weft::pool pool{{.threads = 2, .capacity = 1, .on_full = [&handed](weft::job j) {
                     handed.fetch_add(1);
                     j.run();
                   }}};
  pool.pause();
  pool.spawn([] {});
  std::thread resumer([&] {
    while (pool.stats().overflowed == 0) std::this_thread::yield();
    pool.resume();
  });
  auto f = pool.submit_on(1, [] { return weft::this_worker::index(); });
  EXPECT_EQ(f.get(), std::optional<std::size_t>{1});
  resumer.join();
  EXPECT_EQ(handed.load(), 0);
  // Under reject it is refused like any other job.
  weft::pool strict{{.threads = 2, .capacity = 1, .on_full = weft::overflow::reject}};
  strict.pause();
  strict.spawn([] {});
  EXPECT_THROW(strict.spawn_on(0, [] {}), weft::queue_full);
  strict.resume();
  strict.wait();
}

TEST(control, an_overflow_callable_gets_the_job_to_run_keep_or_drop) {
  std::vector<weft::job> kept;
  weft::pool pool{{.threads = 2, .capacity = 1, .on_full = [&kept](weft::job j) {
                     kept.push_back(std::move(j));
                   }}};
  pool.pause();
  auto first = pool.submit([] { return 1; });
  auto second = pool.submit([] { return 2; });
  auto third = pool.submit([] { return 3; });
  std::atomic<int> detached{0};
  pool.spawn([&] { detached.fetch_add(1); });
  ASSERT_EQ(kept.size(), 3U);
  EXPECT_TRUE(kept[0]);
  kept[0].run();
  EXPECT_FALSE(kept[0]);
  EXPECT_THROW(kept[0].run(), weft::usage_error);
  EXPECT_EQ(second.get(), 2);
  kept[1].reset();
  EXPECT_THROW(third.get(), weft::job_cancelled);
  weft::job moved = std::move(kept[2]);
  EXPECT_FALSE(kept[2]);
  moved = weft::job{};  // drops the detached one
  EXPECT_EQ(detached.load(), 0);
  EXPECT_EQ(pool.stats().cancelled, 2U);
  EXPECT_EQ(pool.stats().overflowed, 3U);
  pool.resume();
  EXPECT_EQ(first.get(), 1);
  pool.wait();
}

TEST(control, an_overflow_callable_that_throws_reaches_the_error_path) {
  weft::test::error_count errors;
  weft::pool_options options = errors.options(2);
  options.capacity = 1;
  options.on_full = [](weft::job) { throw std::runtime_error("full"); };
  weft::pool pool{options};
  pool.pause();
  pool.spawn([] {});
  std::atomic<int> ran{0};
  pool.spawn([&] { ran.fetch_add(1); });  // dropped with the callable's argument
  EXPECT_EQ(errors.n.load(), 1);
  pool.resume();
  pool.wait();
  EXPECT_EQ(ran.load(), 0);
  EXPECT_EQ(pool.stats().cancelled, 1U);
}

TEST(control, the_pools_own_jobs_are_never_held_up) {
  weft::pool pool{{.threads = 2, .capacity = 1, .on_full = weft::overflow::reject}};
  std::atomic<int> ran{0};
  pool.submit([&] {
        for (int i = 0; i < 100; ++i) pool.spawn([&] { ran.fetch_add(1); });
        weft::task_group tg{pool};
        for (int i = 0; i < 100; ++i) tg.spawn([&] { ran.fetch_add(1); });
        tg.wait();
      })
      .get();
  pool.wait();
  EXPECT_EQ(ran.load(), 200);
}

class bounded_at : public ::testing::TestWithParam<std::size_t> {};

// 8 outside submitters against each policy: every job runs exactly once,
// or is rejected, dropped or run here, and the counts add up.
TEST_P(bounded_at, eight_submitters_and_every_policy) {
  const std::size_t workers = GetParam();
  const int per_sender = static_cast<int>(weft::test::scaled(2000, 50));
  constexpr int senders = 8;
  for (int policy = 0; policy < 4; ++policy) {
    std::atomic<int> ran{0};
    std::atomic<int> rejected{0};
    std::atomic<int> handed{0};
    weft::overflow_policy on_full = weft::overflow::block;
    if (policy == 1) on_full = weft::overflow::reject;
    if (policy == 2) on_full = weft::overflow::run_here;
    if (policy == 3) {
      on_full = [&handed](weft::job j) {
        if (handed.fetch_add(1) % 2 == 0) j.run();  // and drop every other one
      };
    }
    {
      weft::pool pool{{.threads = workers, .capacity = 16, .on_full = on_full}};
      std::vector<std::thread> threads;
      for (int s = 0; s < senders; ++s) {
        threads.emplace_back([&, s] {
          std::mt19937 rng{static_cast<unsigned>(s)};
          for (int i = 0; i < per_sender; ++i) {
            try {
              if (i % 3 == 0) {
                pool.submit([&] { ran.fetch_add(1); }).wait();
              } else {
                pool.spawn([&] { ran.fetch_add(1); });
              }
            } catch (const weft::queue_full&) {
              rejected.fetch_add(1);
            } catch (const weft::job_cancelled&) {
              // a dropped future: counted through stats().cancelled
            }
            if (rng() % 64 == 0) std::this_thread::yield();
          }
        });
      }
      for (auto& t : threads) t.join();
      pool.wait();
      const weft::pool_stats s = pool.stats();
      EXPECT_EQ(ran.load() + rejected.load() + static_cast<int>(s.cancelled), senders * per_sender)
          << "policy " << policy;
      if (policy == 0 || policy == 2) {
        EXPECT_EQ(ran.load(), senders * per_sender);
      }
      if (policy == 1) {
        EXPECT_EQ(static_cast<std::size_t>(rejected.load()), s.overflowed);
      }
      if (policy == 3) {
        EXPECT_EQ(static_cast<std::size_t>(handed.load()), s.overflowed);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(pools, control_at, ::testing::ValuesIn(parallel_counts), name_of);
INSTANTIATE_TEST_SUITE_P(pools, bounded_at, ::testing::ValuesIn(parallel_counts), name_of);

}  // namespace
