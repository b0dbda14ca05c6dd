// Editing a built graph (docs/graph.md, "Editing a built graph"):
// task::work replaces a task's callable (and gives a placeholder work),
// task::remove_successor removes an edge; both between runs only.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;

class graph_edit : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

TEST_P(graph_edit, a_placeholder_given_work_runs_it_in_its_place) {
  weft::pool pool{options()};
  weft::graph g;
  std::vector<char> order;
  auto a = g.emplace([&] { order.push_back('a'); });
  auto p = g.placeholder();
  auto b = g.emplace([&] { order.push_back('b'); });
  a.precede(p);
  p.precede(b);
  pool.run(g).get();
  EXPECT_EQ(std::string(order.begin(), order.end()), "ab");
  EXPECT_TRUE(p.is_placeholder());
  p.work([&] { order.push_back('p'); });
  EXPECT_FALSE(p.is_placeholder());
  order.clear();
  pool.run(g).get();
  EXPECT_EQ(std::string(order.begin(), order.end()), "apb");
}

TEST_P(graph_edit, new_work_replaces_and_destroys_the_old) {
  weft::pool pool{options()};
  weft::graph g;
  auto token = std::make_shared<int>(0);
  std::atomic<int> old_runs{0};
  std::atomic<int> new_runs{0};
  auto t = g.emplace([&old_runs, token] { old_runs.fetch_add(1); }).name("t");
  pool.run(g).get();
  EXPECT_EQ(token.use_count(), 2);
  t.work([&new_runs] { new_runs.fetch_add(1); });
  EXPECT_EQ(token.use_count(), 1) << "the old callable was not destroyed";
  EXPECT_EQ(t.name(), "t") << "work() keeps the name";
  pool.run(g).get();
  pool.run(g).get();
  EXPECT_EQ(old_runs.load(), 1);
  EXPECT_EQ(new_runs.load(), 2);
}

TEST_P(graph_edit, work_turns_a_task_into_a_condition_and_back) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> b_runs{0};
  std::atomic<int> c_runs{0};
  std::atomic<int> d_runs{0};
  auto a = g.emplace([] {});
  auto b = g.emplace([&] { b_runs.fetch_add(1); });
  auto c = g.emplace([&] { c_runs.fetch_add(1); });
  auto d = g.emplace([&] { d_runs.fetch_add(1); });
  a.precede(b, c);
  b.precede(d);
  c.precede(d);
  pool.run(g).get();
  EXPECT_EQ(b_runs.load() + c_runs.load() + d_runs.load(), 3);

  a.work([] { return 1; });  // now picks c only; d waits for b too, so never runs
  EXPECT_TRUE(a.is_condition());
  pool.run(g).get();
  EXPECT_EQ(b_runs.load(), 1);
  EXPECT_EQ(c_runs.load(), 2);
  EXPECT_EQ(d_runs.load(), 1);

  a.work([] { return std::vector<int>{0, 1}; });  // both, as a multi-condition
  pool.run(g).get();
  EXPECT_EQ(b_runs.load(), 2);
  EXPECT_EQ(c_runs.load(), 3);
  EXPECT_EQ(d_runs.load(), 2);

  a.work([] {});  // normal edges again
  EXPECT_FALSE(a.is_condition());
  pool.run(g).get();
  EXPECT_EQ(b_runs.load(), 3);
  EXPECT_EQ(c_runs.load(), 4);
  EXPECT_EQ(d_runs.load(), 3);
}

TEST_P(graph_edit, a_removed_edge_no_longer_orders_its_tasks) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<bool> a_done{false};
  std::atomic<int> b_saw_a{-1};
  auto a = g.emplace([&] {
    std::this_thread::sleep_for(2ms);
    a_done.store(true);
  });
  auto b = g.emplace([&] { b_saw_a.store(a_done.load() ? 1 : 0); });
  auto c = g.emplace([] {});
  a.precede(b, c);
  EXPECT_EQ(b.predecessors(), 1U);
  pool.run(g).get();
  EXPECT_EQ(b_saw_a.load(), 1);
  a.remove_successor(b);
  EXPECT_EQ(a.successors(), 1U);
  EXPECT_EQ(b.predecessors(), 0U);
  // b is a source now: it runs, without waiting for a.
  a_done.store(false);
  b_saw_a.store(-1);
  pool.run(g).get();
  EXPECT_NE(b_saw_a.load(), -1) << "b did not run once it had no predecessor";
  EXPECT_TRUE(a_done.load());
}

TEST_P(graph_edit, removing_one_of_two_equal_edges_keeps_the_other) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> order{0};
  std::atomic<int> a_at{0};
  std::atomic<int> b_at{0};
  auto a = g.emplace([&] { a_at.store(++order); });
  auto b = g.emplace([&] { b_at.store(++order); });
  a.precede(b);
  a.precede(b);
  EXPECT_EQ(b.predecessors(), 2U);
  a.remove_successor(b);
  EXPECT_EQ(b.predecessors(), 1U);
  pool.run(g).get();
  EXPECT_LT(a_at.load(), b_at.load());
  a.remove_successor(b);
  EXPECT_EQ(b.predecessors(), 0U);
  EXPECT_THROW(a.remove_successor(b), weft::graph_error);
}

TEST_P(graph_edit, a_condition_s_later_edges_move_down_an_index) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> x{0};
  std::atomic<int> y{0};
  std::atomic<int> z{0};
  auto cond = g.emplace([] { return 1; });
  auto tx = g.emplace([&] { x.fetch_add(1); });
  auto ty = g.emplace([&] { y.fetch_add(1); });
  auto tz = g.emplace([&] { z.fetch_add(1); });
  cond.precede(tx, ty, tz);
  pool.run(g).get();
  EXPECT_EQ(y.load(), 1);
  cond.remove_successor(tx);  // y is 0 now, z is 1
  pool.run(g).get();
  EXPECT_EQ(z.load(), 1);
  // tx has no predecessor left: a source, it runs too.
  EXPECT_EQ(x.load(), 1);
  EXPECT_EQ(y.load(), 1);
}

TEST_P(graph_edit, removing_an_edge_of_a_cycle_makes_the_graph_runnable) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> ran{0};
  auto s = g.emplace([&] { ran.fetch_add(1); }).name("s");
  auto a = g.emplace([&] { ran.fetch_add(1); }).name("a");
  auto b = g.emplace([&] { ran.fetch_add(1); }).name("b");
  s.precede(a);
  a.precede(b);
  b.precede(a);
  EXPECT_THROW((void)pool.run(g), weft::graph_error);
  b.remove_successor(a);
  pool.run(g).get();
  EXPECT_EQ(ran.load(), 3);
}

TEST_P(graph_edit, edits_while_the_graph_runs_are_refused) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<bool> release{false};
  auto a = g.emplace([&] {
    while (!release.load()) std::this_thread::sleep_for(100us);
  });
  auto b = g.emplace([] {});
  a.precede(b);
  if (GetParam() == 0) GTEST_SKIP() << "a sequential pool runs the graph only inside get()";
  auto f = pool.run(g);
  EXPECT_THROW(a.remove_successor(b), weft::graph_error);
  EXPECT_THROW(b.work([] {}), weft::graph_error);
  release.store(true);
  f.get();
  a.remove_successor(b);  // fine once it has finished
  b.work([] {});
}

INSTANTIATE_TEST_SUITE_P(workers, graph_edit, ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

TEST(graph_edit_errors, a_composed_task_cannot_be_given_work) {
  weft::graph inner;
  inner.emplace([] {});
  weft::graph outer;
  auto m = outer.compose(inner);
  EXPECT_THROW(m.work([] {}), weft::graph_error);
}

TEST(graph_edit_errors, a_missing_edge_says_which_tasks) {
  weft::graph g;
  auto a = g.emplace([] {}).name("load");
  auto b = g.emplace([] {}).name("store");
  try {
    a.remove_successor(b);
    ADD_FAILURE() << "no exception";
  } catch (const weft::graph_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("load"), std::string::npos) << what;
    EXPECT_NE(what.find("store"), std::string::npos) << what;
  }
  weft::graph other;
  auto c = other.emplace([] {});
  EXPECT_THROW(a.remove_successor(c), weft::graph_error);
}

}  // namespace
