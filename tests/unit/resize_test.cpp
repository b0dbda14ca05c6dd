// pool::resize (docs/control.md, "Resizing"): the pool grows and shrinks
// while it runs; nothing queued is lost or run twice, this_worker::index()
// stays below size() for jobs started after the call, hooks and pinning
// follow the workers, and bad calls are refused with usage_error.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <weft/detail/platform.hpp>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;

// The highest this_worker::index() of `jobs` jobs run now, and that each ran.
std::size_t highest_index(weft::pool& pool, int jobs) {
  std::atomic<std::size_t> highest{0};
  std::atomic<int> ran{0};
  for (int i = 0; i < jobs; ++i) {
    pool.spawn([&] {
      const std::size_t me = weft::this_worker::index().value();
      std::size_t seen = highest.load();
      while (seen < me && !highest.compare_exchange_weak(seen, me)) {
      }
      std::this_thread::sleep_for(10us);
      ran.fetch_add(1);
    });
  }
  pool.wait();
  EXPECT_EQ(ran.load(), jobs);
  return highest.load();
}

// Every worker index that runs one of `jobs` slow-ish jobs, spread out.
std::set<std::size_t> indexes_seen(weft::pool& pool, int jobs) {
  std::mutex m;
  std::set<std::size_t> seen;
  for (int i = 0; i < jobs; ++i) {
    pool.spawn([&] {
      // 1 ms: Windows sleeps whole milliseconds, a shorter sleep none.
      std::this_thread::sleep_for(1ms);
      std::lock_guard lock{m};
      seen.insert(weft::this_worker::index().value());
    });
  }
  pool.wait();
  return seen;
}

class resize_from : public ::testing::TestWithParam<std::size_t> {};

TEST_P(resize_from, grows_and_shrinks_and_indexes_stay_below_size) {
  const std::size_t start = GetParam();
  weft::pool pool{{.threads = start, .max_threads = 8}};
  EXPECT_EQ(pool.size(), start);
  EXPECT_EQ(pool.max_size(), 8U);
  EXPECT_EQ(pool.slots(), 9U);
  for (const std::size_t n : std::initializer_list<std::size_t>{8, 1, 3, start, 2, 8, 5}) {
    pool.resize(n);
    EXPECT_EQ(pool.size(), n);
    EXPECT_EQ(pool.slots(), 9U) << "slots() is fixed for the pool's life";
    EXPECT_EQ(pool.stats().workers, n);
    EXPECT_EQ(pool.stats().per_worker.size(), n);
    EXPECT_LT(highest_index(pool, 200), n);
  }
}

TEST_P(resize_from, every_spawn_on_index_below_the_new_size_runs_on_its_worker) {
  weft::pool pool{{.threads = GetParam(), .max_threads = 8}};
  for (const std::size_t n : {8UL, 2UL, 6UL}) {
    pool.resize(n);
    std::vector<weft::future<std::size_t>> on;
    for (std::size_t i = 0; i < n; ++i) {
      on.push_back(pool.submit_on(i, [] { return weft::this_worker::index().value(); }));
    }
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(on[i].get(), i);
    EXPECT_THROW(pool.spawn_on(n, [] {}), weft::usage_error);
  }
}

TEST_P(resize_from, a_grown_pool_uses_its_new_workers) {
  weft::pool pool{{.threads = GetParam(), .max_threads = 8}};
  pool.resize(4);
  // Jobs that sleep leave room for every worker to take some; 4 workers
  // and at most 4 sleeping jobs at a time would need all of them.
  std::set<std::size_t> seen;
  for (int round = 0; round < 20 && seen.size() < 4; ++round) {
    const std::set<std::size_t> now = indexes_seen(pool, 64);
    seen.insert(now.begin(), now.end());
  }
  EXPECT_EQ(seen, (std::set<std::size_t>{0, 1, 2, 3}));
}

INSTANTIATE_TEST_SUITE_P(workers, resize_from, ::testing::Values(1, 2, 4, 8),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

TEST(resize, shrinking_waits_for_the_job_a_leaving_worker_runs_and_keeps_its_queued_jobs) {
  weft::pool pool{{.threads = 4}};
  std::atomic<bool> release{false};
  std::atomic<int> children{0};
  std::atomic<bool> long_job_started{false};
  std::atomic<bool> long_job_done{false};
  // A job on worker 3 that queues children on its own deque, then runs
  // until told to stop.
  pool.spawn_on(3, [&] {
    for (int i = 0; i < 100; ++i) pool.spawn([&] { children.fetch_add(1); });
    long_job_started.store(true);
    while (!release.load()) std::this_thread::sleep_for(100us);
    long_job_done.store(true);
  });
  while (!long_job_started.load()) std::this_thread::sleep_for(100us);
  std::thread releaser([&] {
    std::this_thread::sleep_for(30ms);
    release.store(true);
  });
  pool.resize(1);
  EXPECT_TRUE(long_job_done.load()) << "resize returned before the leaving worker's job ended";
  EXPECT_EQ(pool.size(), 1U);
  pool.wait();
  releaser.join();
  EXPECT_EQ(children.load(), 100);
}

TEST(resize, mailbox_jobs_of_a_leaving_worker_run_on_the_others) {
  weft::pool pool{{.threads = 4}};
  pool.pause();
  std::atomic<int> ran{0};
  std::atomic<int> misplaced{0};
  std::vector<weft::future<std::size_t>> futures;
  for (int i = 0; i < 10; ++i) {
    pool.spawn_on(3, [&] { ran.fetch_add(1); });
    futures.push_back(pool.submit_on(2, [] { return weft::this_worker::index().value(); }));
  }
  pool.resize(2);
  pool.resume();
  pool.wait();
  EXPECT_EQ(ran.load(), 10);
  for (auto& f : futures) {
    if (f.get() >= 2) misplaced.fetch_add(1);
  }
  EXPECT_EQ(misplaced.load(), 0);
}

TEST(resize, a_paused_pool_resizes_and_keeps_its_jobs_queued) {
  weft::pool pool{{.threads = 2, .max_threads = 6}};
  pool.pause();
  std::atomic<int> ran{0};
  for (int i = 0; i < 1000; ++i) pool.spawn([&] { ran.fetch_add(1); });
  pool.resize(6);
  pool.resize(1);
  pool.resize(3);
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(ran.load(), 0) << "a resize started jobs of a paused pool";
  EXPECT_TRUE(pool.paused());
  pool.resume();
  pool.wait();
  EXPECT_EQ(ran.load(), 1000);
}

TEST(resize, workers_asleep_when_the_pool_shrinks_still_wake_for_new_work) {
  for (int round = 0; round < 20; ++round) {
    weft::pool pool{{.threads = 4}};
    std::this_thread::sleep_for(1ms);  // let every worker fall asleep
    pool.resize(1 + static_cast<std::size_t>(round % 3));
    std::atomic<int> ran{0};
    for (int i = 0; i < 50; ++i) pool.spawn([&] { ran.fetch_add(1); });
    EXPECT_EQ(pool.submit([] { return 5; }).get(), 5);
    pool.wait();
    EXPECT_EQ(ran.load(), 50);
  }
}

TEST(resize, hooks_run_for_workers_that_come_and_go) {
  std::mutex m;
  std::vector<std::size_t> started;
  std::vector<std::size_t> stopped;
  weft::pool pool{{.threads = 2,
                   .max_threads = 5,
                   .on_worker_start =
                       [&](std::size_t i) {
                         std::lock_guard lock{m};
                         started.push_back(i);
                       },
                   .on_worker_stop =
                       [&](std::size_t i) {
                         std::lock_guard lock{m};
                         stopped.push_back(i);
                       }}};
  auto sorted = [&](std::vector<std::size_t>& v) {
    std::lock_guard lock{m};
    std::vector<std::size_t> copy = v;
    std::sort(copy.begin(), copy.end());
    return copy;
  };
  pool.resize(5);
  EXPECT_EQ(sorted(started), (std::vector<std::size_t>{0, 1, 2, 3, 4}))
      << "resize returned before a new worker's start hook ran";
  pool.resize(3);
  EXPECT_EQ(sorted(stopped), (std::vector<std::size_t>{3, 4}))
      << "resize returned before a leaving worker's stop hook ran";
  pool.resize(4);
  EXPECT_EQ(sorted(started), (std::vector<std::size_t>{0, 1, 2, 3, 3, 4}));
}

TEST(resize, a_throwing_start_hook_fails_the_resize_and_the_pool_keeps_its_size) {
  std::atomic<bool> fail{false};
  weft::pool pool{{.threads = 2, .max_threads = 6, .on_worker_start = [&](std::size_t i) {
                     if (fail.load() && i == 4) throw std::runtime_error("no room for worker 4");
                   }}};
  fail.store(true);
  try {
    pool.resize(6);
    ADD_FAILURE() << "resize did not rethrow the start hook's exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "no room for worker 4");
  }
  EXPECT_EQ(pool.size(), 2U);
  EXPECT_LT(highest_index(pool, 100), 2U);
  fail.store(false);
  pool.resize(6);
  EXPECT_EQ(pool.size(), 6U);
  EXPECT_EQ(pool.submit_on(5, [] { return weft::this_worker::index().value(); }).get(), 5U);
}

TEST(resize, grown_workers_are_pinned_round_robin) {
  const std::vector<int> allowed = weft::allowed_cpus();
  weft::pool pool{{.threads = 1, .max_threads = 4, .cpus = allowed}};
  pool.resize(4);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(pool.submit_on(i, [] { return weft::detail::platform::current_cpu(); }).get(),
              allowed[i % allowed.size()])
        << "worker " << i;
  }
}

TEST(resize, the_helper_slot_is_max_size_and_never_shared_with_a_grown_worker) {
  weft::pool pool{{.threads = 1, .max_threads = 3}};
  EXPECT_EQ(pool.slots(), 4U);
  // The only worker is held, so this thread runs the job as the helper.
  std::atomic<bool> holding{false};
  std::atomic<bool> release{false};
  pool.spawn([&] {
    holding.store(true);
    while (!release.load()) std::this_thread::sleep_for(100us);
  });
  while (!holding.load()) std::this_thread::sleep_for(100us);
  std::atomic<std::size_t> helper{99};
  std::atomic<bool> ran{false};
  pool.spawn([&] {
    helper.store(weft::this_worker::index().value_or(98));
    ran.store(true);
  });
  pool.wait_until([&] { return ran.load(); });
  EXPECT_EQ(helper.load(), 3U) << "the helper slot is max_size(), not size()";
  release.store(true);
  pool.wait();
  pool.resize(3);
  EXPECT_LT(highest_index(pool, 100), 3U) << "a grown worker used the helper's index";
}

TEST(resize, reductions_of_a_flow_made_before_the_pool_grew_stay_private) {
  weft::pool pool{{.threads = 1, .max_threads = 8}};
  weft::flow f{pool};
  std::uint64_t x = 0;
  for (std::uint64_t i = 1; i <= 2000; ++i) {
    f.emplace(
        [i](std::uint64_t& copy) {
          std::this_thread::sleep_for(std::chrono::microseconds{i % 3});
          copy += i;
        },
        weft::reduce(x, std::plus<>{}));
    if (i == 10) pool.resize(8);
  }
  f.wait(x);
  EXPECT_EQ(x, 2000U * 2001U / 2);
}

TEST(resize, concurrent_resizes_take_turns_and_every_job_runs_once) {
  weft::pool pool{{.threads = 2, .max_threads = 8}};
  std::atomic<int> ran{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> resizers;
  for (int r = 0; r < 3; ++r) {
    resizers.emplace_back([&, r] {
      std::size_t n = static_cast<std::size_t>(r) + 1;
      while (!stop.load()) {
        n = n % 8 + 1;
        pool.resize(n);
        EXPECT_GE(pool.size(), 1U);
      }
    });
  }
  const int jobs = static_cast<int>(weft::test::scaled(50000, 5000));
  for (int i = 0; i < jobs; ++i) pool.spawn([&] { ran.fetch_add(1); });
  pool.wait();
  stop.store(true);
  for (auto& t : resizers) t.join();
  EXPECT_EQ(ran.load(), jobs);
}

// ---------------------------------------------------------------------------
// Errors

TEST(resize_errors, zero_workers_is_refused) {
  weft::pool pool{{.threads = 2}};
  EXPECT_THROW(pool.resize(0), weft::usage_error);
  EXPECT_EQ(pool.size(), 2U);
}

TEST(resize_errors, more_than_max_threads_is_refused_and_says_which_option) {
  weft::pool pool{{.threads = 2}};
  EXPECT_EQ(pool.max_size(), 2U);
  try {
    pool.resize(3);
    ADD_FAILURE() << "no exception";
  } catch (const weft::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("max_threads"), std::string::npos) << e.what();
  }
  pool.resize(1);  // shrinking and growing back is allowed
  pool.resize(2);
  EXPECT_EQ(pool.size(), 2U);
}

TEST(resize_errors, a_sequential_pool_cannot_be_resized) {
  weft::pool pool{{.threads = 0}};
  EXPECT_THROW(pool.resize(1), weft::usage_error);
  EXPECT_EQ(pool.max_size(), 0U);
  EXPECT_EQ(pool.slots(), 1U);
}

TEST(resize_errors, bad_max_threads_are_refused_at_construction) {
  EXPECT_THROW(weft::pool({.threads = 4, .max_threads = 2}), weft::usage_error);
  EXPECT_THROW(weft::pool({.threads = 0, .max_threads = 2}), weft::usage_error);
  EXPECT_THROW(weft::pool({.threads = 1, .max_threads = (std::size_t{1} << 16) + 1}),
               weft::usage_error);
}

TEST(resize_errors, a_job_of_the_pool_may_not_resize_it) {
  weft::pool pool{{.threads = 2, .max_threads = 4}};
  auto f = pool.submit([&] { pool.resize(4); });
  EXPECT_THROW(f.get(), weft::usage_error);
  EXPECT_EQ(pool.size(), 2U);
}

}  // namespace
