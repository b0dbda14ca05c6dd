// run_n and run_until (issue 8): ports of what Taskflow's tests check of
// Executor::run_n and run_until.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <thread>
#include <weft/weft.hpp>

#include "support/chain_graph.hpp"
#include "support/support.hpp"

namespace {

class graph_sequence : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

using weft::test::chain_graph;

TEST_P(graph_sequence, run_n_runs_the_graph_n_times_in_a_row) {
  weft::pool pool{options()};
  chain_graph cg;
  pool.run_n(cg.g, 5).get();
  EXPECT_EQ(cg.runs.load(), 5);
  pool.run_n(cg.g, 100).get();
  EXPECT_EQ(cg.runs.load(), 105);
  EXPECT_EQ(cg.plain, 315);
  pool.run_n(cg.g, 0).get();
  EXPECT_EQ(cg.runs.load(), 105);
  EXPECT_FALSE(cg.g.running());
}

TEST_P(graph_sequence, run_until_checks_the_predicate_after_each_run) {
  weft::pool pool{options()};
  chain_graph cg;
  pool.run_until(cg.g, [&] { return cg.runs.load() == 7; }).get();
  EXPECT_EQ(cg.runs.load(), 7);
  // At least one run, even if the predicate already holds.
  pool.run_until(cg.g, [] { return true; }).get();
  EXPECT_EQ(cg.runs.load(), 8);
  EXPECT_THROW((void)pool.run_until(cg.g, nullptr), weft::usage_error);
}

TEST_P(graph_sequence, an_exception_stops_the_sequence) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> runs{0};
  g.emplace([&] {
    if (runs.fetch_add(1) == 2) throw std::runtime_error("third run");
  });
  auto f = pool.run_n(g, 10);
  EXPECT_THROW(f.get(), std::runtime_error);
  EXPECT_EQ(runs.load(), 3);
  // The graph runs again afterwards.
  pool.run_n(g, 2).get();
  EXPECT_EQ(runs.load(), 5);
}

TEST_P(graph_sequence, changing_a_graph_during_a_sequence_is_an_error) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<bool> release{false};
  g.emplace([&] {
    while (GetParam() != 0 && !release.load()) std::this_thread::yield();
  });
  auto runs = pool.run_n(g, 3);
  EXPECT_THROW(g.emplace([] {}), weft::graph_error);
  release.store(true);
  runs.get();
  EXPECT_FALSE(g.running());
  EXPECT_NO_THROW(g.emplace([] {}));
}

TEST_P(graph_sequence, destroying_a_graph_waits_for_its_sequence) {
  weft::pool pool{options()};
  std::atomic<int> runs{0};
  weft::future<void> sequence;
  {
    weft::graph g;
    g.emplace([&] { runs.fetch_add(1); });
    sequence = pool.run_n(g, 50);
  }
  EXPECT_EQ(runs.load(), 50);
  sequence.get();
}

TEST_P(graph_sequence, running_the_graph_during_a_sequence_queues_the_run) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<bool> release{false};
  std::atomic<int> runs{0};
  g.emplace([&] {
    while (GetParam() != 0 && !release.load()) std::this_thread::yield();
    runs.fetch_add(1);
  });
  auto sequence = pool.run_n(g, 2);
  auto after = pool.run(g);  // behind the whole sequence
  release.store(true);
  after.get();
  EXPECT_EQ(runs.load(), 3);
  EXPECT_TRUE(sequence.ready());
  sequence.get();
}

TEST_P(graph_sequence, cancelling_a_sequence_future_ends_it) {
  if (GetParam() == 0) GTEST_SKIP() << "nothing else runs while a sequential pool's waiter waits";
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> runs{0};
  g.emplace([&] { runs.fetch_add(1); });
  auto forever = pool.run_until(g, [] { return false; });
  while (runs.load() < 3) std::this_thread::yield();
  EXPECT_TRUE(forever.cancel());
  EXPECT_THROW(forever.get(), weft::run_cancelled);
  EXPECT_FALSE(g.running());
}

TEST_P(graph_sequence, a_throwing_predicate_ends_the_sequence) {
  weft::pool pool{options()};
  chain_graph cg;
  int calls = 0;
  auto f = pool.run_until(cg.g, [&] {
    if (++calls == 4) throw std::runtime_error("predicate");
    return false;
  });
  EXPECT_THROW(f.get(), std::runtime_error);
  EXPECT_EQ(cg.runs.load(), 4);
  EXPECT_EQ(cg.plain, 12);
}

TEST_P(graph_sequence, run_n_of_a_graph_without_tasks_keeps_the_stack_flat) {
  weft::pool pool{options()};
  weft::graph g;
  pool.run_n(g, 1'000'000).get();  // each run ends as it starts: a loop, not recursion
  int checks = 0;
  pool.run_until(g, [&] { return ++checks == 100'000; }).get();
  EXPECT_EQ(checks, 100'000);
}

TEST_P(graph_sequence, cancelling_the_graph_stops_run_until) {
  if (GetParam() == 0) GTEST_SKIP() << "nothing else runs while a sequential pool's waiter waits";
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> runs{0};
  g.emplace([&] {
    runs.fetch_add(1);
    std::this_thread::yield();
  });
  auto forever = pool.run_until(g, [] { return false; });
  while (runs.load() < 3) std::this_thread::yield();
  while (!g.cancel()) std::this_thread::yield();  // between runs nothing is in flight
  EXPECT_THROW(forever.get(), weft::run_cancelled);
  EXPECT_FALSE(g.running());
}

INSTANTIATE_TEST_SUITE_P(workers, graph_sequence, ::testing::Values(0, 1, 2, 4, 8),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
