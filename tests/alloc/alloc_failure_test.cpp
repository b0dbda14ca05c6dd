// Allocation-failure injection: the global operator new of this executable
// fails once, at the k-th allocation after it is armed, for k swept over a
// mixed workload (outside submitters, jobs spawning jobs, futures, groups,
// graph runs with wide fans). Whatever k hits, no job may be lost or run
// twice, nothing may hang, and the failure must reach somebody: the caller
// of spawn/submit/run, a future, a group, or pool.wait(). Not under the
// sanitizers, which bring their own allocator.
#if __has_include(<execinfo.h>)
#include <execinfo.h>  // backtrace(): where a failure nobody was told of came from
#define WEFT_TEST_BACKTRACE 1
#endif
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <new>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/replace_new.hpp"
#include "support/support.hpp"

#ifdef WEFT_TEST_REPLACES_NEW
namespace {
// Allocations left before the one that fails; 0 when disarmed.
std::atomic<long> countdown{0};
std::atomic<long> failures{0};
#ifdef WEFT_TEST_BACKTRACE
void* where[16];  // the stack of the last failure, printed if nobody was told
int where_depth = 0;
#endif

void fail_kth_allocation() {
  // Relaxed: the test arms and disarms from its own thread and only needs
  // one failure somewhere in the window.
  if (countdown.load(std::memory_order_relaxed) > 0 &&
      countdown.fetch_sub(1, std::memory_order_relaxed) == 1) {
    failures.fetch_add(1, std::memory_order_relaxed);
#ifdef WEFT_TEST_BACKTRACE
    where_depth = backtrace(where, 16);
#endif
    throw std::bad_alloc();
  }
}
}  // namespace
#endif

namespace {

class alloc_failure : public ::testing::TestWithParam<std::size_t> {};

// Counts what was attempted, refused (the call threw) and what ran.
struct tally {
  std::atomic<long> attempted{0};
  std::atomic<long> refused{0};
  std::atomic<long> ran{0};
  std::atomic<long> delivered{0};  // bad_alloc seen by a waiter

  template <class Submit>
  void attempt(Submit&& submit) {
    attempted.fetch_add(1, std::memory_order_relaxed);
    try {
      submit();
    } catch (const std::bad_alloc&) {
      refused.fetch_add(1, std::memory_order_relaxed);
    }
  }
};

// One round: every submission either runs exactly once or throws to its
// caller; returns normally (no hang) once everything has finished.
// Unused under the sanitizers (the test is skipped there).
[[maybe_unused]] void round(weft::pool& pool, tally& t, const std::function<void()>& arm) {
  std::atomic<bool> go{false};
  std::vector<std::thread> outside;
  outside.reserve(2);
  for (int th = 0; th < 2; ++th) {
    outside.emplace_back([&] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int i = 0; i < 40; ++i) {
        t.attempt([&] {
          pool.spawn([&] {
            t.ran.fetch_add(1, std::memory_order_relaxed);
            // Children spawned by a job, enough to make its deque grow.
            for (int c = 0; c < 3; ++c) {
              t.attempt(
                  [&] { pool.spawn([&] { t.ran.fetch_add(1, std::memory_order_relaxed); }); });
            }
          });
        });
        t.attempt([&] {
          weft::future<int> f = pool.submit([&] {
            t.ran.fetch_add(1, std::memory_order_relaxed);
            return 1;
          });
          try {
            (void)f.get();
          } catch (const std::bad_alloc&) {
            t.delivered.fetch_add(1, std::memory_order_relaxed);
          }
        });
      }
    });
  }
  arm();
  go.store(true, std::memory_order_release);
  // A group and a wide graph from this thread meanwhile.
  try {
    weft::task_group group{pool};
    for (int i = 0; i < 20; ++i) {
      t.attempt([&] { group.spawn([&] { t.ran.fetch_add(1, std::memory_order_relaxed); }); });
    }
    group.wait();
  } catch (const std::bad_alloc&) {
    t.delivered.fetch_add(1, std::memory_order_relaxed);
  }
  try {
    weft::graph g;
    auto source = g.emplace([&] { t.ran.fetch_add(1, std::memory_order_relaxed); });
    for (int i = 0; i < 300; ++i) {
      g.emplace([&] { t.ran.fetch_add(1, std::memory_order_relaxed); }).succeed(source);
    }
    // 301 tasks if the run starts; none if run() throws.
    t.attempted.fetch_add(301, std::memory_order_relaxed);
    try {
      pool.run(g).get();
    } catch (const std::bad_alloc&) {
      // Either run() refused (nothing ran) or a task's allocation failed;
      // tell them apart by what ran below.
      t.delivered.fetch_add(1, std::memory_order_relaxed);
    }
  } catch (const std::bad_alloc&) {
    // Building the graph failed: nothing was attempted through it.
    t.delivered.fetch_add(1, std::memory_order_relaxed);
  }
  for (auto& th : outside) th.join();
  for (;;) {
    try {
      pool.wait();
      break;
    } catch (const std::bad_alloc&) {
      t.delivered.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

TEST_P(alloc_failure, no_job_is_lost_or_run_twice_whatever_allocation_fails) {
#ifndef WEFT_TEST_REPLACES_NEW
  GTEST_SKIP() << "the sanitizers bring their own allocator";
#else
  weft::test::allocation_hook.store(&fail_kth_allocation, std::memory_order_relaxed);
  const std::size_t sweep = weft::test::scaled(400, 40);
  long hit = 0;
  for (std::size_t k = 1; k <= sweep; k += 1 + k / 40) {
    weft::pool pool{{.threads = GetParam()}};
    tally t;
    failures.store(0, std::memory_order_relaxed);
    round(pool, t, [k] { countdown.store(static_cast<long>(k), std::memory_order_relaxed); });
    countdown.store(0, std::memory_order_relaxed);
    hit += failures.load(std::memory_order_relaxed);
    // The graph's tasks were attempted as a whole: if its run was refused,
    // 301 of the attempts never ran and nobody was told one by one.
    const long attempted = t.attempted.load();
    const long refused = t.refused.load();
    const long ran = t.ran.load();
    const bool graph_refused = attempted - refused - ran == 301;
    EXPECT_EQ(ran, attempted - refused - (graph_refused ? 301 : 0))
        << "k = " << k << ": jobs lost or run twice (attempted " << attempted << ", refused "
        << refused << ", ran " << ran << ")";
    if (failures.load() != 0) {
      // Told to a caller or waiter, or absorbed: a graph task that could
      // not be queued ran on the thread that made it ready.
      const long told = refused + t.delivered.load() + (graph_refused ? 1 : 0) +
                        static_cast<long>(pool.stats().unqueued_runs);
      EXPECT_GT(told, 0) << "k = " << k << ": an allocation failed and nobody was told";
#ifdef WEFT_TEST_BACKTRACE
      if (told == 0) backtrace_symbols_fd(where, where_depth, 2);
#endif
    }
  }
  weft::test::allocation_hook.store(nullptr, std::memory_order_relaxed);
  EXPECT_GT(hit, 0) << "the sweep never reached an allocation";
#endif
}

INSTANTIATE_TEST_SUITE_P(workers, alloc_failure, ::testing::Values(0, 1, 2, 4),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

#ifdef WEFT_TEST_REPLACES_NEW
std::atomic<long> counted_allocations{0};
void count_allocation() { counted_allocations.fetch_add(1, std::memory_order_relaxed); }

// One flow program: `tasks` tasks over 16 objects, each writing one object
// and reading or updating (commute, concurrent) another, ordered after the
// task before it now and then. runs[i] counts how often task i ran.
std::size_t emplace_program(weft::flow& f, std::vector<long>& objects, std::size_t tasks,
                            std::vector<std::atomic<int>>& runs) {
  std::size_t refused = 0;
  weft::flow_task previous;
  for (std::size_t i = 0; i < tasks; ++i) {
    std::atomic<int>* ran = &runs[i];
    long& a = objects[i % 16];
    long& b = objects[(i * 7 + 3) % 16];
    auto body = [ran](long& x, long& y) {
      ran->fetch_add(1, std::memory_order_relaxed);
      x += y + 1;
    };
    try {
      switch (i % 4) {
        case 0:
          previous = f.emplace(
              [ran](long& x, const long& y) {
                ran->fetch_add(1, std::memory_order_relaxed);
                x += y + 1;
              },
              weft::write(a), weft::read(b));
          break;
        case 1:
          previous = f.emplace(body, weft::write(a), weft::commute(b));
          break;
        case 2:
          previous = f.emplace(body, weft::write(a), weft::concurrent(b));
          break;
        default:
          if (previous.empty()) {
            previous = f.emplace(body, weft::write(a), weft::write(b));
          } else {
            previous = f.emplace(body, weft::write(a), weft::write(b), weft::after(previous));
          }
          break;
      }
    } catch (const std::bad_alloc&) {
      ++refused;
      runs[i].store(-1000, std::memory_order_relaxed);  // must stay untouched
    }
  }
  return refused;
}
#endif

class flow_alloc : public ::testing::TestWithParam<std::size_t> {};

TEST_P(flow_alloc, steady_state_allocates_nothing) {
#ifndef WEFT_TEST_REPLACES_NEW
  GTEST_SKIP() << "the sanitizers bring their own allocator";
#else
  weft::pool pool{{.threads = GetParam()}};
  weft::flow f{pool, {.window = 512}};
  std::vector<long> objects(16, 0);
  const std::size_t tasks = 20000;
  std::vector<std::atomic<int>> runs(tasks);
  // Warm-up: with workers, every object is held by a gate task until the
  // producer has filled the window, so the flow makes all the nodes it can
  // ever need (a sequential flow fills its window by itself).
  std::atomic<bool> open{GetParam() == 0};
  for (long& object : objects) {
    f.emplace(
        [&open](long&) {
          while (!open.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
        },
        weft::write(object));
  }
  std::thread opener([&open] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    open.store(true);
  });
  emplace_program(f, objects, tasks, runs);
  f.wait();
  opener.join();
  counted_allocations.store(0);
  weft::test::allocation_hook.store(&count_allocation, std::memory_order_relaxed);
  emplace_program(f, objects, tasks, runs);
  f.wait();
  weft::test::allocation_hook.store(nullptr, std::memory_order_relaxed);
  EXPECT_EQ(counted_allocations.load(), 0) << "allocations in a warmed-up flow";
  for (std::size_t i = 0; i < tasks; ++i) ASSERT_EQ(runs[i].load(), 2) << "task " << i;
#endif
}

TEST_P(flow_alloc, a_failed_allocation_loses_no_task_and_runs_none_twice) {
#ifndef WEFT_TEST_REPLACES_NEW
  GTEST_SKIP() << "the sanitizers bring their own allocator";
#else
  weft::test::allocation_hook.store(&fail_kth_allocation, std::memory_order_relaxed);
  const std::size_t sweep = weft::test::scaled(300, 30);
  long hit = 0;
  for (std::size_t k = 1; k <= sweep; k += 1 + k / 30) {
    weft::pool pool{{.threads = GetParam()}};
    weft::flow f{pool, {.window = 64}};
    std::vector<long> objects(16, 0);
    const std::size_t tasks = 400;
    std::vector<std::atomic<int>> runs(tasks);
    failures.store(0, std::memory_order_relaxed);
    countdown.store(static_cast<long>(k), std::memory_order_relaxed);
    const std::size_t refused = emplace_program(f, objects, tasks, runs);
    countdown.store(0, std::memory_order_relaxed);
    f.wait();
    hit += failures.load(std::memory_order_relaxed);
    std::size_t ran = 0;
    for (std::size_t i = 0; i < tasks; ++i) {
      const int r = runs[i].load();
      ASSERT_TRUE(r == 1 || r == -1000)
          << "k = " << k << ": task " << i << " ran " << r << " times";
      if (r == 1) ++ran;
    }
    EXPECT_EQ(ran + refused, tasks) << "k = " << k;
  }
  weft::test::allocation_hook.store(nullptr, std::memory_order_relaxed);
  EXPECT_GT(hit, 0) << "the sweep never reached an allocation";
#endif
}

INSTANTIATE_TEST_SUITE_P(workers, flow_alloc, ::testing::Values(0, 1, 2, 4),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
