// weft::semaphore (docs/graph.md, "Semaphores"): task.acquire(s) and
// task.release(s) limit how many tasks hold s at once, across graphs and
// pools; a task that cannot acquire waits without holding a worker.
// Ports of Taskflow's semaphore tests use its inputs: a critical section of
// N tasks incrementing a plain counter, and tasks that each take several
// semaphores in crossing orders.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;

class graph_semaphore : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

// The most tasks seen inside at once.
struct occupancy {
  std::atomic<int> inside{0};
  std::atomic<int> most{0};
  void enter() {
    const int now = inside.fetch_add(1) + 1;
    int seen = most.load();
    while (seen < now && !most.compare_exchange_weak(seen, now)) {
    }
  }
  void leave() { inside.fetch_sub(1); }
};

TEST_P(graph_semaphore, a_semaphore_of_one_is_a_critical_section) {
  weft::pool pool{options()};
  weft::graph g;
  weft::semaphore s{1};
  int counter = 0;  // plain: only the semaphore protects it
  occupancy in;
  constexpr int tasks = 100;
  for (int i = 0; i < tasks; ++i) {
    g.emplace([&] {
       in.enter();
       for (int k = 0; k < 100; ++k) ++counter;
       in.leave();
     })
        .acquire(s)
        .release(s);
  }
  for (int run = 1; run <= 5; ++run) {
    pool.run(g).get();
    EXPECT_EQ(counter, run * tasks * 100);
  }
  EXPECT_EQ(in.most.load(), 1);
  EXPECT_EQ(s.available(), 1U);
}

TEST_P(graph_semaphore, at_most_n_tasks_hold_a_semaphore_of_n) {
  weft::pool pool{options()};
  weft::graph g;
  weft::semaphore s{3};
  EXPECT_EQ(s.max_holders(), 3U);
  occupancy in;
  std::atomic<int> ran{0};
  for (int i = 0; i < 60; ++i) {
    g.emplace([&] {
       in.enter();
       std::this_thread::sleep_for(100us);
       in.leave();
       ran.fetch_add(1);
     })
        .acquire(s)
        .release(s);
  }
  pool.run(g).get();
  EXPECT_EQ(ran.load(), 60);
  EXPECT_LE(in.most.load(), 3);
  EXPECT_EQ(s.available(), 3U);
}

TEST_P(graph_semaphore, one_semaphore_limits_two_graphs_on_two_pools) {
  weft::pool a{options()};
  weft::pool b{options()};
  weft::graph ga;
  weft::graph gb;
  weft::semaphore s{1};
  occupancy in;
  int shared = 0;
  for (weft::graph* g : {&ga, &gb}) {
    for (int i = 0; i < 40; ++i) {
      g->emplace([&] {
         in.enter();
         ++shared;
         std::this_thread::sleep_for(20us);
         in.leave();
       })
          .acquire(s)
          .release(s);
    }
  }
  auto fa = a.run(ga);
  auto fb = b.run(gb);
  fa.get();
  fb.get();
  EXPECT_EQ(shared, 80);
  EXPECT_EQ(in.most.load(), 1);
}

// Taskflow's crossing acquisitions: each task takes two of three semaphores
// of one unit, in an order that would deadlock with blocking locks.
TEST_P(graph_semaphore, tasks_taking_several_semaphores_in_crossing_orders_all_run) {
  weft::pool pool{options()};
  weft::graph g;
  weft::semaphore s1{1};
  weft::semaphore s2{1};
  weft::semaphore s3{1};
  weft::semaphore* order[3][2] = {{&s1, &s2}, {&s2, &s3}, {&s3, &s1}};
  std::atomic<int> ran{0};
  int a = 0;  // each pair of tasks sharing a semaphore never overlaps
  for (int i = 0; i < 30; ++i) {
    auto& pair = order[i % 3];
    g.emplace([&] {
       ++a;
       ran.fetch_add(1);
     })
        .acquire(*pair[0])
        .acquire(*pair[1])
        .release(*pair[0])
        .release(*pair[1]);
  }
  for (int run = 1; run <= 10; ++run) {
    pool.run(g).get();
    EXPECT_EQ(ran.load(), run * 30);
  }
  EXPECT_EQ(a, 300);
  EXPECT_EQ(s1.available() + s2.available() + s3.available(), 3U);
}

TEST_P(graph_semaphore, a_waiting_task_holds_no_worker) {
  if (GetParam() < 2) GTEST_SKIP() << "needs a second worker to show it is free";
  weft::pool pool{options()};
  weft::graph g;
  weft::semaphore s{1};
  std::atomic<bool> holding{false};
  std::atomic<int> others{0};
  std::atomic<int> others_before_release{-1};
  // h holds s until the 100 independent tasks have run (for at most 10 s).
  // Once it holds s, `gate` lets 20 waiters and those 100 tasks go: if a
  // waiter blocked its thread, the independent tasks could not all run
  // before h releases s. (A fixed 50 ms hold failed when the other worker
  // was descheduled that long.)
  g.emplace([&] {
     holding.store(true);
     const auto deadline = std::chrono::steady_clock::now() + 10s;
     while (others.load() < 100 && std::chrono::steady_clock::now() < deadline) {
       std::this_thread::sleep_for(100us);
     }
     others_before_release.store(others.load());
   })
      .acquire(s)
      .release(s);
  auto gate = g.emplace([&] {
    while (!holding.load()) std::this_thread::sleep_for(100us);
  });
  for (int i = 0; i < 20; ++i) gate.precede(g.emplace([] {}).acquire(s).release(s));
  for (int i = 0; i < 100; ++i) gate.precede(g.emplace([&] { others.fetch_add(1); }));
  pool.run(g).get();
  EXPECT_EQ(others.load(), 100);
  EXPECT_EQ(others_before_release.load(), 100) << "waiting tasks kept the workers from the others";
  EXPECT_EQ(s.available(), 1U);
}

TEST_P(graph_semaphore, cancelling_a_run_with_waiting_tasks_finishes_it) {
  weft::pool pool{options()};
  weft::graph g;
  weft::semaphore s{1};
  std::atomic<bool> holding{false};
  std::atomic<bool> release{false};
  std::atomic<int> ran{0};
  g.emplace([&] {
     holding.store(true);
     while (!release.load()) std::this_thread::sleep_for(100us);
   })
      .acquire(s)
      .release(s);
  for (int i = 0; i < 20; ++i) g.emplace([&] { ran.fetch_add(1); }).acquire(s).release(s);
  if (GetParam() == 0) GTEST_SKIP() << "a sequential pool runs the graph only inside get()";
  auto f = pool.run(g);
  while (!holding.load()) std::this_thread::sleep_for(100us);
  EXPECT_TRUE(g.cancel());
  release.store(true);
  EXPECT_THROW(f.get(), weft::run_cancelled);
  EXPECT_LE(ran.load(), 20);
  EXPECT_EQ(s.available(), 1U);
  // And the graph runs whole again.
  ran.store(0);
  pool.run(g).get();
  EXPECT_EQ(ran.load(), 20);
}

INSTANTIATE_TEST_SUITE_P(workers, graph_semaphore, ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

TEST(graph_semaphore_errors, no_units_is_refused) {
  EXPECT_THROW(weft::semaphore{0}, weft::usage_error);
}

TEST(graph_semaphore_errors, a_running_graph_gets_no_new_semaphore) {
  weft::pool pool{{.threads = 1}};
  weft::graph g;
  weft::semaphore s{1};
  std::atomic<bool> release{false};
  auto t = g.emplace([&] {
    while (!release.load()) std::this_thread::sleep_for(100us);
  });
  auto f = pool.run(g);
  EXPECT_THROW(t.acquire(s), weft::graph_error);
  release.store(true);
  f.get();
  t.acquire(s).release(s);
  pool.run(g).get();
  EXPECT_EQ(s.available(), 1U);
}

TEST(graph_semaphore_errors, a_release_without_acquire_never_exceeds_the_maximum) {
  weft::pool pool{{.threads = 2}};
  weft::graph g;
  weft::semaphore s{2};
  g.emplace([] {}).release(s);
  pool.run(g).get();
  EXPECT_EQ(s.available(), 2U);
}

}  // namespace
