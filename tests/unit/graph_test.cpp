// weft::graph: building, running, rerunning, cancelling, conditions,
// composition, errors and DOT output, over 0, 1, 2, 4 and 8 workers.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;

class graph_test : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

// Seed 000's example: (a + b) * (c + d), each value from its own task.
TEST_P(graph_test, seed_sum_product) {
  weft::pool pool{options()};
  weft::graph g;
  int a = 0;
  int b = 0;
  int c = 0;
  int d = 0;
  int sum_ab = 0;
  int sum_cd = 0;
  int product = 0;
  auto get_a = g.emplace([&] { a = 1; }).name("get_a");
  auto get_b = g.emplace([&] { b = 2; }).name("get_b");
  auto get_c = g.emplace([&] { c = 3; }).name("get_c");
  auto get_d = g.emplace([&] { d = 4; }).name("get_d");
  auto get_sum_ab = g.emplace([&] { sum_ab = a + b; }).name("get_sum_ab");
  auto get_sum_cd = g.emplace([&] { sum_cd = c + d; }).name("get_sum_cd");
  auto get_product = g.emplace([&] { product = sum_ab * sum_cd; }).name("get_product");
  get_sum_ab.succeed(get_a, get_b);
  get_sum_cd.succeed(get_c, get_d);
  get_product.succeed(get_sum_ab, get_sum_cd);
  pool.run(g).get();
  EXPECT_EQ(product, 21);
  EXPECT_EQ(get_product.predecessors(), 2U);
  EXPECT_EQ(get_a.successors(), 1U);
  EXPECT_EQ(get_a.name(), "get_a");
}

// Seed 000's barrier: an empty task after a and b and before c and d.
TEST_P(graph_test, placeholder_is_a_barrier_between_groups) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> first_done{0};
  std::atomic<int> violations{0};
  std::vector<weft::task> first;
  std::vector<weft::task> second;
  for (int i = 0; i < 8; ++i) {
    first.push_back(g.emplace([&] {
      std::this_thread::sleep_for(100us);
      first_done.fetch_add(1);
    }));
    second.push_back(g.emplace([&] {
      if (first_done.load() != 8) violations.fetch_add(1);
    }));
  }
  weft::task barrier = g.placeholder().name("barrier");
  EXPECT_TRUE(barrier.is_placeholder());
  EXPECT_TRUE(g.emplace().is_placeholder());
  for (auto& t : first) barrier.succeed(t);
  for (auto& t : second) barrier.precede(t);
  for (int run = 0; run < 3; ++run) {
    first_done = 0;
    pool.run(g).get();
    EXPECT_EQ(first_done.load(), 8);
  }
  EXPECT_EQ(violations.load(), 0);
}

// Seed 000's Cancel/Reset/resubmit: a cancelled task and its successors do
// not run; reset undoes it; a graph can be submitted again once finished.
TEST_P(graph_test, cancel_reset_and_resubmit) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> ran_a{0};
  std::atomic<int> ran_b{0};
  std::atomic<int> ran_c{0};
  std::atomic<int> ran_other{0};
  auto a = g.emplace([&] { ran_a.fetch_add(1); });
  auto b = g.emplace([&] { ran_b.fetch_add(1); });
  auto c = g.emplace([&] { ran_c.fetch_add(1); });
  auto other = g.emplace([&] { ran_other.fetch_add(1); });
  a.precede(b);
  b.precede(c);
  other.precede(c);  // c has a cancelled ancestor: it is skipped too

  EXPECT_TRUE(b.cancel());  // not started yet: it will not run
  pool.run(g).get();
  EXPECT_EQ(ran_a.load(), 1);
  EXPECT_EQ(ran_b.load(), 0);
  EXPECT_EQ(ran_c.load(), 0);
  EXPECT_EQ(ran_other.load(), 1);

  pool.run(g).get();  // still cancelled
  EXPECT_EQ(ran_b.load(), 0);

  b.reset();
  pool.run(g).get();
  EXPECT_EQ(ran_a.load(), 3);
  EXPECT_EQ(ran_b.load(), 1);
  EXPECT_EQ(ran_c.load(), 1);

  // b has run: cancelling now returns false, but it stays out of later runs.
  EXPECT_FALSE(b.cancel());
  pool.run(g).get();
  EXPECT_EQ(ran_b.load(), 1);
  EXPECT_EQ(ran_c.load(), 1);
  EXPECT_TRUE(b.cancel());  // cancelled and not run since: true
  b.reset();
  pool.run(g).get();
  EXPECT_EQ(ran_b.load(), 2);
  EXPECT_EQ(ran_c.load(), 2);
}

TEST_P(graph_test, a_task_cancels_itself_while_running) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> runs{0};
  bool cancel_result = true;
  weft::task self;
  self = g.emplace([&] {
    runs.fetch_add(1);
    cancel_result = self.cancel();
  });
  pool.run(g).get();
  EXPECT_FALSE(cancel_result);  // it is running: "has run"
  pool.run(g).get();
  EXPECT_EQ(runs.load(), 1);
}

TEST_P(graph_test, reruns_reset_the_counters) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> sum{0};
  auto top = g.emplace([&] { sum.fetch_add(1); });
  auto bottom = g.emplace([&] { sum.fetch_add(100); });
  for (int i = 0; i < 20; ++i) {
    auto mid = g.emplace([&] { sum.fetch_add(10); });
    top.precede(mid);
    mid.precede(bottom);
  }
  const int runs = static_cast<int>(weft::test::scaled(1000, 10));
  for (int r = 0; r < runs; ++r) pool.run(g).get();
  EXPECT_EQ(sum.load(), runs * 301);
}

TEST_P(graph_test, empty_graph_runs_at_once) {
  weft::pool pool{options()};
  weft::graph g;
  auto f = pool.run(g);
  EXPECT_TRUE(f.ready());
  f.get();
  EXPECT_FALSE(g.running());
}

TEST_P(graph_test, running_a_running_graph_queues_the_run) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<bool> release{false};
  std::atomic<int> runs{0};
  g.emplace([&] {
    while (!release.load()) std::this_thread::yield();
    runs.fetch_add(1);
  });
  auto f = pool.run(g);
  if (GetParam() == 0) {
    // Sequential: nothing runs before get(), so the run is still in flight.
    EXPECT_TRUE(g.running());
  }
  auto queued = pool.run(g);  // starts once the first run has finished
  EXPECT_TRUE(g.running());
  EXPECT_THROW((void)g.emplace([] {}), weft::graph_error);
  release = true;
  f.get();
  queued.get();
  EXPECT_EQ(runs.load(), 2);
  EXPECT_FALSE(g.running());
  pool.run(g).get();  // and again
  EXPECT_EQ(runs.load(), 3);
}

TEST_P(graph_test, exception_cancels_the_rest_and_is_rethrown) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> after{0};
  auto thrower = g.emplace([] { throw std::runtime_error("boom"); }).name("thrower");
  auto next = g.emplace([&] { after.fetch_add(1); });
  thrower.precede(next);
  std::atomic<bool> do_throw{true};
  // Also a chain that would start after the throw: skipped.
  auto ok = g.emplace([&] {
    if (!do_throw.load()) after.fetch_add(10);
  });
  (void)ok;
  auto f = pool.run(g);
  try {
    f.get();
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "boom");
  }
  EXPECT_EQ(after.load() % 10, 0);  // `next` never ran
  // The graph runs again afterwards (and throws again).
  EXPECT_THROW(pool.run(g).get(), std::runtime_error);
}

TEST_P(graph_test, exception_of_a_dropped_future_reaches_pool_wait) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<bool> dropped{false};
  // The task throws only once the future is gone: the run then hands the
  // exception to the pool. (A future dropped after its run failed can only
  // have the exception printed, as for pool::submit.)
  g.emplace([&] {
    while (!dropped.load()) std::this_thread::yield();
    throw std::logic_error("dropped");
  });
  { auto f = pool.run(g); }
  dropped = true;
  EXPECT_THROW(pool.wait(), std::logic_error);
}

TEST_P(graph_test, cancel_a_run) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> ran{0};
  auto first = g.emplace([&] {
    ran.fetch_add(1);
    g.cancel();  // from inside the run
  });
  auto prev = first;
  for (int i = 0; i < 100; ++i) {
    auto t = g.emplace([&] { ran.fetch_add(1); });
    prev.precede(t);
    prev = t;
  }
  EXPECT_THROW(pool.run(g).get(), weft::run_cancelled);
  EXPECT_EQ(ran.load(), 1);
  EXPECT_FALSE(g.cancel());  // nothing in flight
}

// future::cancel() reaches the run through future_state's cancel hook.
TEST_P(graph_test, future_cancel_stops_the_run) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<bool> release{false};
  std::atomic<int> after{0};
  auto gate = g.emplace([&] {
    while (!release.load()) std::this_thread::yield();
  });
  for (int i = 0; i < 10; ++i) gate.precede(g.emplace([&] { after.fetch_add(1); }));
  auto f = pool.run(g);
  const bool accepted = f.cancel();
  release = true;
  EXPECT_TRUE(accepted);
  EXPECT_THROW(f.get(), weft::run_cancelled);
  EXPECT_EQ(after.load(), 0);
  // A finished run cannot be cancelled any more, and the graph runs again.
  auto again = pool.run(g);
  again.wait();
  EXPECT_FALSE(again.cancel());
  again.get();
  EXPECT_EQ(after.load(), 10);
}

// Issue 8's reproducer: a run that loops forever is cancelled by the job that
// started it, which then drops the future. A cancel asked for is no error, so
// pool.wait() returns normally and nothing is printed.
TEST_P(graph_test, a_cancelled_run_whose_future_is_dropped_is_no_error) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> loops{0};
  auto a = g.emplace([] {});
  auto b = g.emplace([&] {
    loops.fetch_add(1, std::memory_order_relaxed);
    return 0;  // selects its only successor: itself
  });
  a.precede(b);
  b.precede(b);
  pool.spawn([&] {
    auto f = pool.run(g);
    // With one worker (or none) the run starts only after this job; with
    // more, another worker starts it (waited for, at most 10 s: a fixed
    // sleep was too short when that worker was descheduled).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    while (GetParam() >= 2 && loops.load() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    EXPECT_TRUE(f.cancel());
  });  // f dropped here, cancelled, possibly before the run has finished
  EXPECT_NO_THROW(pool.wait());
  EXPECT_FALSE(g.running());
  if (GetParam() >= 2) {
    EXPECT_GT(loops.load(), 0);
  }
}

// task::cancel() says whether the task will still run (once more, in the run
// in flight) or not at all; after a finished run it is false, since the task
// has run, and it keeps the task from running in later runs either way.
TEST_P(graph_test, task_cancel_reports_whether_the_task_had_started) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> ran{0};
  auto t = g.emplace([&] { ran.fetch_add(1); });
  EXPECT_TRUE(t.cancel());  // not started: it never runs
  pool.run(g).get();
  EXPECT_EQ(ran.load(), 0);
  t.reset();
  pool.run(g).get();
  EXPECT_EQ(ran.load(), 1);
  EXPECT_FALSE(t.cancel());  // it had run since the last reset
  pool.run(g).get();
  EXPECT_EQ(ran.load(), 1);  // ... and is skipped from now on
  EXPECT_TRUE(t.cancel());   // skipped runs do not start it
}

TEST_P(graph_test, cycle_is_reported_with_its_tasks) {
  weft::pool pool{options()};
  weft::graph g;
  auto a = g.emplace([] {}).name("a");
  auto b = g.emplace([] {}).name("b");
  auto c = g.emplace([] {}).name("c");
  auto d = g.emplace([] {}).name("d");
  a.precede(b);
  b.precede(c);
  c.precede(d);
  d.precede(b);
  try {
    pool.run(g).get();
    FAIL() << "expected graph_error";
  } catch (const weft::graph_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("b -> c -> d -> b"), std::string::npos) << what;
  }
  EXPECT_FALSE(g.running());
}

TEST_P(graph_test, misuse_throws) {
  weft::pool pool{options()};
  weft::graph g1;
  weft::graph g2;
  auto a = g1.emplace([] {});
  auto b = g2.emplace([] {});
  EXPECT_THROW(a.precede(b), weft::graph_error);
  EXPECT_THROW(weft::task{}.name("x"), weft::graph_error);
  weft::graph moved = std::move(g1);
  EXPECT_THROW((void)pool.run(g1), weft::graph_error);  // NOLINT(bugprone-use-after-move)
  EXPECT_THROW((void)g1.emplace([] {}), weft::graph_error);
  a.name("still valid after the move");
  pool.run(moved).get();
  EXPECT_THROW((void)g2.compose(g2), weft::graph_error);
}

TEST(graph_debug, handle_outliving_its_graph_throws_in_debug_builds) {
#ifdef NDEBUG
  GTEST_SKIP() << "checked only without NDEBUG";
#else
  weft::task t;
  {
    weft::graph g;
    t = g.emplace([] {});
  }
  EXPECT_THROW(t.name("gone"), weft::graph_error);
#endif
}

TEST_P(graph_test, condition_loops) {
  weft::pool pool{options()};
  weft::graph g;
  int i = 0;
  int after = 0;
  auto init = g.emplace([&] { i = 0; }).name("init");
  auto body = g.emplace([&] { ++i; }).name("body");
  auto cond = g.emplace([&] { return i < 5 ? 0 : 1; }).name("cond");
  auto done = g.emplace([&] { after = i; }).name("done");
  EXPECT_TRUE(cond.is_condition());
  init.precede(body);
  body.precede(cond);
  cond.precede(body, done);
  for (int r = 0; r < 3; ++r) {
    after = 0;
    pool.run(g).get();
    EXPECT_EQ(after, 5);
  }
}

// Taskflow's multi-condition tasks: a task returning a range of successor
// indices runs each of those successors.
TEST_P(graph_test, multi_condition_runs_every_chosen_successor_once) {
  weft::pool pool{options()};
  weft::graph g;
  std::vector<int> picks;
  std::atomic<int> ran[4] = {};
  auto cond = g.emplace([&] { return picks; });
  EXPECT_TRUE(cond.is_condition());
  for (auto& r : ran) cond.precede(g.emplace([&r] { r.fetch_add(1); }));
  auto expect_runs = [&](std::vector<int> chosen, std::array<int, 4> want) {
    for (auto& r : ran) r.store(0);
    picks = std::move(chosen);
    pool.run(g).get();
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(ran[i].load(), want[i]) << "successor " << i;
  };
  expect_runs({0, 2}, {1, 0, 1, 0});
  expect_runs({3, 2, 1, 0}, {1, 1, 1, 1});
  expect_runs({1, 1, 1}, {0, 1, 0, 0});       // each once, however often listed
  expect_runs({-1, 4, 99, 2}, {0, 0, 1, 0});  // negative and out of range: ignored
  expect_runs({}, {0, 0, 0, 0});              // none
}

TEST_P(graph_test, multi_condition_fans_out_a_hundred_branches_on_every_rerun) {
  weft::pool pool{options()};
  weft::graph g;
  constexpr int width = 100;
  std::atomic<int> ran{0};
  auto cond = g.emplace([] {
    std::array<std::uint16_t, width> all{};
    for (int i = 0; i < width; ++i) all[i] = static_cast<std::uint16_t>(i);
    return all;
  });
  auto end = g.emplace([&] { ran.fetch_add(1000); });
  for (int i = 0; i < width; ++i) {
    auto b = g.emplace([&] { ran.fetch_add(1); });
    cond.precede(b);
    b.precede(end);
  }
  for (int r = 1; r <= 20; ++r) {
    pool.run(g).get();
    EXPECT_EQ(ran.load(), r * (width + 1000)) << "run " << r;
  }
}

TEST_P(graph_test, multi_condition_loops_then_fans_out) {
  weft::pool pool{options()};
  weft::graph g;
  int count = 0;
  std::atomic<int> x{0};
  std::atomic<int> y{0};
  auto init = g.emplace([&] { count = 0; });
  auto cond = g.emplace([&]() -> std::vector<int> {
    if (++count < 5) return {0};  // back to itself
    return {1, 2};
  });
  auto a = g.emplace([&] { x.fetch_add(1); });
  auto b = g.emplace([&] { y.fetch_add(1); });
  init.precede(cond);
  cond.precede(cond, a, b);
  for (int r = 1; r <= 3; ++r) {
    pool.run(g).get();
    EXPECT_EQ(count, 5);
    EXPECT_EQ(x.load(), r);
    EXPECT_EQ(y.load(), r);
  }
}

TEST_P(graph_test, a_throwing_multi_condition_runs_no_successor) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> ran{0};
  auto cond = g.emplace([]() -> std::vector<int> { throw std::runtime_error("no choice"); });
  cond.precede(g.emplace([&] { ran.fetch_add(1); }), g.emplace([&] { ran.fetch_add(1); }));
  EXPECT_THROW(pool.run(g).get(), std::runtime_error);
  EXPECT_EQ(ran.load(), 0);
}

TEST(graph_dump, a_multi_condition_is_a_double_diamond_with_dashed_edges) {
  weft::graph g;
  auto cond = g.emplace([] { return std::vector<int>{0}; }).name("fan");
  cond.precede(g.emplace([] {}).name("x"));
  std::ostringstream out;
  g.dump(out);
  EXPECT_NE(out.str().find("shape=diamond, peripheries=2"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("style=dashed, label=\"0\""), std::string::npos) << out.str();
}

TEST_P(graph_test, condition_branches) {
  weft::pool pool{options()};
  weft::graph g;
  int pick = 0;
  std::atomic<int> left{0};
  std::atomic<int> right{0};
  std::atomic<int> joined{0};
  auto cond = g.emplace([&] { return pick; });
  auto l = g.emplace([&] { left.fetch_add(1); });
  auto r = g.emplace([&] { right.fetch_add(1); });
  auto l2 = g.emplace([&] { joined.fetch_add(1); });
  cond.precede(l, r);
  l.precede(l2);
  pick = 1;
  pool.run(g).get();
  EXPECT_EQ(left.load(), 0);
  EXPECT_EQ(right.load(), 1);
  EXPECT_EQ(joined.load(), 0);
  pick = 0;
  pool.run(g).get();
  EXPECT_EQ(left.load(), 1);
  EXPECT_EQ(joined.load(), 1);
  pick = 7;  // out of range: nothing
  pool.run(g).get();
  pick = -1;
  pool.run(g).get();
  EXPECT_EQ(left.load() + right.load(), 2);
}

TEST_P(graph_test, compose_runs_a_graph_as_one_task) {
  weft::pool pool{options()};
  weft::graph inner;
  std::atomic<int> inner_runs{0};
  auto x = inner.emplace([&] { inner_runs.fetch_add(1); });
  auto y = inner.emplace([&] { inner_runs.fetch_add(1); });
  x.precede(y);
  weft::graph outer;
  int before = 0;
  int seen = -1;
  auto first = outer.emplace([&] { before = inner_runs.load(); });
  auto module = outer.compose(inner).name("inner");
  auto last = outer.emplace([&] { seen = inner_runs.load(); });
  first.precede(module);
  module.precede(last);
  for (int r = 0; r < 5; ++r) pool.run(outer).get();
  EXPECT_EQ(seen, 10);
  EXPECT_EQ(before, 8);
}

TEST_P(graph_test, task_runs_a_task_group_and_a_graph) {
  weft::pool pool{options()};
  weft::graph inner;
  std::atomic<int> n{0};
  for (int i = 0; i < 10; ++i) inner.emplace([&] { n.fetch_add(1); });
  weft::graph outer;
  outer.emplace([&] {
    weft::task_group group{pool};
    for (int i = 0; i < 10; ++i) group.spawn([&] { n.fetch_add(1); });
    group.wait();
    pool.run(inner).get();
  });
  pool.run(outer).get();
  EXPECT_EQ(n.load(), 20);
}

TEST_P(graph_test, large_callables_are_boxed) {
  weft::pool pool{options()};
  weft::graph g;
  std::vector<int> data(100, 1);
  int sum = 0;
  std::array<int, 64> big{};
  big.fill(2);
  g.emplace([&sum, data, big] {
    for (int v : data) sum += v;
    for (int v : big) sum += v;
  });
  pool.run(g).get();
  EXPECT_EQ(sum, 228);
}

TEST(graph_dump, writes_dot_that_graphviz_parses) {
  weft::graph g;
  auto a = g.emplace([] {}).name("load \"x\"");
  auto b = g.emplace([] { return 1; }).name("branch");
  auto c = g.placeholder().name("barrier");
  auto d = g.emplace([] {});
  a.precede(b);
  b.precede(c, d);
  std::ostringstream out;
  g.dump(out);
  const std::string dot = out.str();
  EXPECT_NE(dot.find("digraph"), std::string::npos);
  EXPECT_NE(dot.find("load \\\"x\\\""), std::string::npos);
  EXPECT_NE(dot.find("t1 -> t3 [style=dashed, label=\"1\"]"), std::string::npos) << dot;
  if (std::system("command -v dot > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "GraphViz's dot is not installed (scripts/deps.sh installs graphviz)";
  }
  const std::string path = ::testing::TempDir() + "weft_graph_dump.dot";
  {
    std::ofstream file(path);
    file << dot;
  }
  const std::string command = "dot -Tcanon " + path + " > /dev/null";
  EXPECT_EQ(std::system(command.c_str()), 0) << dot;
  std::remove(path.c_str());
}

TEST_P(graph_test, a_task_waiting_for_its_own_runs_future_is_a_usage_error) {
  // A run ends only after its tasks, and the next run starts only after it:
  // a task that waits for the future of its own run, or of a run queued
  // behind it, would wait for itself. It hung; now the wait throws.
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<weft::future<void>*> awaited{nullptr};
  std::atomic<int> refused{0};
  std::atomic<int> ran{0};
  g.emplace([&] {
    if (ran.fetch_add(1) > 0) return;  // only the first run's task waits
    weft::future<void>* f = nullptr;
    while ((f = awaited.load()) == nullptr) std::this_thread::yield();
    try {
      f->wait();
    } catch (const weft::usage_error&) {
      refused.fetch_add(1);
    }
  });
  if (GetParam() == 0) {
    // A sequential pool runs the task inside get(): only its own run's
    // future can be handed to it in time.
    auto first = pool.run(g);
    awaited = &first;
    first.get();
  } else {
    auto first = pool.run(g);
    auto second = pool.run(g);  // queued behind the first
    awaited = &second;
    first.get();
    second.get();
  }
  EXPECT_EQ(refused.load(), 1);
}

INSTANTIATE_TEST_SUITE_P(workers, graph_test, ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
