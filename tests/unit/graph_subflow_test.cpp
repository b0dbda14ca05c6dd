// Subflows (issue 8, Taskflow's dynamic tasking): a graph task taking a
// weft::subflow& builds a child graph while it runs. Modelled on what
// Taskflow's subflow tests check (joined and detached subflows of 0 to 1,000
// tasks, trees of nested subflows, Fibonacci by spawning), plus weft's own
// promises: exceptions, cancellation, reruns, edges and no blocked worker.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

class graph_subflow : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

TEST_P(graph_subflow, a_joined_subflow_ends_before_the_successors_start) {
  weft::pool pool{options()};
  for (const int n : {0, 1, 10, 1000}) {
    weft::graph g;
    std::atomic<int> done{0};
    int seen = -1;
    auto root = g.emplace([&](weft::subflow& sf) {
      for (int i = 0; i < n; ++i) sf.emplace([&] { done.fetch_add(1); });
      EXPECT_EQ(sf.size(), static_cast<std::size_t>(n));
    });
    auto after = g.emplace([&] { seen = done.load(); });
    root.precede(after);
    pool.run(g).get();
    EXPECT_EQ(seen, n);
  }
}

TEST_P(graph_subflow, a_detached_subflow_still_ends_within_the_run) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> done{0};
  auto root = g.emplace([&](weft::subflow& sf) {
    for (int i = 0; i < 100; ++i) {
      sf.emplace([&] {
        std::this_thread::yield();
        done.fetch_add(1);
      });
    }
    sf.detach();
    EXPECT_TRUE(sf.detached());
  });
  auto after = g.emplace([] {});
  root.precede(after);
  for (int run = 1; run <= 5; ++run) {
    pool.run(g).get();
    EXPECT_EQ(done.load(), 100 * run);
  }
}

// A binary tree of nested subflows: each level spawns two children.
void grow(weft::subflow& sf, int depth, std::atomic<int>& leaves) {
  if (depth == 0) {
    leaves.fetch_add(1);
    return;
  }
  for (int k = 0; k < 2; ++k) {
    sf.emplace([depth, &leaves](weft::subflow& child) { grow(child, depth - 1, leaves); });
  }
}

TEST_P(graph_subflow, nested_subflows_make_a_tree) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> leaves{0};
  std::atomic<int> seen{0};
  auto root = g.emplace([&](weft::subflow& sf) { grow(sf, 10, leaves); });
  auto after = g.emplace([&] { seen = leaves.load(); });
  root.precede(after);
  pool.run(g).get();
  EXPECT_EQ(seen.load(), 1024);
}

// Fibonacci by spawning: fib(n) is a subflow of fib(n-1) and fib(n-2) and a
// task adding their results once both subflows have joined.
void fib(weft::subflow& sf, int n, long& out) {
  if (n < 2) {
    out = n;
    return;
  }
  auto parts = std::make_shared<std::array<long, 2>>();
  auto a = sf.emplace([n, parts](weft::subflow& s) { fib(s, n - 1, (*parts)[0]); });
  auto b = sf.emplace([n, parts](weft::subflow& s) { fib(s, n - 2, (*parts)[1]); });
  auto sum = sf.emplace([parts, &out] { out = (*parts)[0] + (*parts)[1]; });
  a.precede(sum);
  b.precede(sum);
}

TEST_P(graph_subflow, fibonacci_by_spawning) {
  weft::pool pool{options()};
  weft::graph g;
  long result = 0;
  g.emplace([&](weft::subflow& sf) { fib(sf, 18, result); });
  pool.run(g).get();
  EXPECT_EQ(result, 2584);
  result = 0;
  pool.run(g).get();  // rebuilt and run again
  EXPECT_EQ(result, 2584);
}

TEST_P(graph_subflow, an_exception_in_a_subflow_fails_the_run) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<bool> after_ran{false};
  std::atomic<bool> fail{true};
  auto root = g.emplace([&](weft::subflow& sf) {
    auto a = sf.emplace([&] {
      if (fail.load()) throw std::runtime_error("in the subflow");
    });
    auto b = sf.emplace([] {});
    a.precede(b);
  });
  auto after = g.emplace([&] { after_ran = true; });
  root.precede(after);
  EXPECT_THROW(pool.run(g).get(), std::runtime_error);
  EXPECT_FALSE(after_ran.load());
  fail = false;
  pool.run(g).get();
  EXPECT_TRUE(after_ran.load());
}

TEST_P(graph_subflow, an_exception_in_the_building_callable_fails_the_run) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> ran{0};
  g.emplace([&](weft::subflow& sf) {
    sf.emplace([&] { ran.fetch_add(1); });
    throw std::runtime_error("while building");
  });
  EXPECT_THROW(pool.run(g).get(), std::runtime_error);
  EXPECT_EQ(ran.load(), 0);  // what was built never runs
}

TEST_P(graph_subflow, a_cycle_in_a_subflow_fails_the_run) {
  weft::pool pool{options()};
  weft::graph g;
  g.emplace([&](weft::subflow& sf) {
    auto a = sf.emplace([] {});
    auto b = sf.emplace([] {});
    a.precede(b);
    b.precede(a);
  });
  EXPECT_THROW(pool.run(g).get(), weft::graph_error);
}

TEST_P(graph_subflow, cancelling_the_run_skips_the_subflow_tasks_not_started) {
  if (GetParam() == 0) GTEST_SKIP() << "nothing runs before a sequential pool's get()";
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  std::atomic<int> later{0};
  g.emplace([&](weft::subflow& sf) {
    auto first = sf.emplace([&] {
      started = true;
      while (!release.load()) std::this_thread::yield();
    });
    for (int i = 0; i < 100; ++i) first.precede(sf.emplace([&] { later.fetch_add(1); }));
  });
  auto run = pool.run(g);
  while (!started.load()) std::this_thread::yield();
  EXPECT_TRUE(run.cancel());
  release = true;
  EXPECT_THROW(run.get(), weft::run_cancelled);
  EXPECT_EQ(later.load(), 0);
}

TEST_P(graph_subflow, reruns_rebuild_the_subflow) {
  weft::pool pool{options()};
  weft::graph g;
  int run = 0;
  long plain = 0;  // one subflow task at a time touches it
  std::atomic<int> tasks{0};
  g.emplace([&](weft::subflow& sf) {
    ++run;
    weft::task prev;
    for (int i = 0; i < run; ++i) {
      auto t = sf.emplace([&] {
        ++plain;
        tasks.fetch_add(1);
      });
      if (i != 0) prev.precede(t);
      prev = t;
    }
  });
  pool.run_n(g, 50).get();
  EXPECT_EQ(tasks.load(), 50 * 51 / 2);
  EXPECT_EQ(plain, 50L * 51 / 2);
}

TEST_P(graph_subflow, a_condition_task_loops_inside_a_subflow) {
  weft::pool pool{options()};
  weft::graph g;
  int turns = 0;
  g.emplace([&](weft::subflow& sf) {
    auto init = sf.emplace([&] { turns = 0; });
    auto body = sf.emplace([&] { ++turns; });
    auto again = sf.emplace([&] { return turns < 10 ? 0 : 1; });
    auto done = sf.placeholder();
    init.precede(body);
    body.precede(again);
    again.precede(body, done);
  });
  pool.run(g).get();
  EXPECT_EQ(turns, 10);
}

TEST_P(graph_subflow, edges_between_a_subflow_and_its_parent_graph_are_refused) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> refused{0};
  auto outside = g.emplace([] {});
  auto root = g.emplace([&](weft::subflow& sf) {
    try {
      sf.emplace([] {}).precede(outside);
    } catch (const weft::graph_error&) {
      refused.fetch_add(1);
    }
  });
  outside.precede(root);
  pool.run(g).get();
  EXPECT_EQ(refused.load(), 1);
}

TEST_P(graph_subflow, a_subflow_composes_another_graph) {
  weft::pool pool{options()};
  weft::graph module;
  std::atomic<int> inner{0};
  auto m1 = module.emplace([&] { inner.fetch_add(1); });
  auto m2 = module.emplace([&] { inner.fetch_add(10); });
  m1.precede(m2);
  weft::graph g;
  std::atomic<int> seen{0};
  auto root = g.emplace([&](weft::subflow& sf) {
    auto before = sf.emplace([] {});
    auto m = sf.compose(module);
    before.precede(m);
  });
  auto after = g.emplace([&] { seen = inner.load(); });
  root.precede(after);
  pool.run(g).get();
  EXPECT_EQ(seen.load(), 11);
}

TEST_P(graph_subflow, deep_nesting_blocks_no_worker) {
  // Each level's task returns before its child runs: 2,000 levels need no
  // stack and no second worker.
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> deepest{0};
  struct level {
    static void make(weft::subflow& sf, int depth, std::atomic<int>& deepest) {
      if (depth == 2000) {
        deepest = depth;
        return;
      }
      sf.emplace([depth, &deepest](weft::subflow& s) { make(s, depth + 1, deepest); });
    }
  };
  g.emplace([&](weft::subflow& sf) { level::make(sf, 1, deepest); });
  pool.run(g).get();
  EXPECT_EQ(deepest.load(), 2000);
}

TEST_P(graph_subflow, task_work_can_make_a_subflow_task) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> ran{0};
  auto t = g.placeholder();
  t.work([&](weft::subflow& sf) { sf.emplace([&] { ran.fetch_add(1); }); });
  pool.run(g).get();
  EXPECT_EQ(ran.load(), 1);
  t.work([&] { ran.fetch_add(10); });  // and back to a plain task
  pool.run(g).get();
  EXPECT_EQ(ran.load(), 11);
}

TEST_P(graph_subflow, a_subflow_task_holding_a_semaphore) {
  weft::pool pool{options()};
  weft::graph g;
  weft::semaphore one{1};
  std::atomic<int> holders{0};
  std::atomic<int> most{0};
  std::atomic<int> children{0};
  for (int i = 0; i < 8; ++i) {
    g.emplace([&](weft::subflow& sf) {
       const int now = holders.fetch_add(1) + 1;
       int seen = most.load();
       while (seen < now && !most.compare_exchange_weak(seen, now)) {
       }
       for (int k = 0; k < 4; ++k) sf.emplace([&] { children.fetch_add(1); });
       holders.fetch_sub(1);
     })
        .acquire(one)
        .release(one);
  }
  pool.run_n(g, 3).get();
  EXPECT_EQ(most.load(), 1);  // the callables ran one at a time
  EXPECT_EQ(children.load(), 3 * 8 * 4);
}

INSTANTIATE_TEST_SUITE_P(workers, graph_subflow, ::testing::Values(0, 1, 2, 4, 8),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
