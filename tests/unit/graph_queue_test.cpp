// Queued runs (issue 8): pool.run(g) on a graph that is still running queues
// the run behind the ones in flight, as Taskflow's executor does. Modelled on
// what Taskflow's tests check of repeated Executor::run calls (many runs of
// one taskflow from one and from several threads, the total count after
// all of them), plus weft's own promises: order, no overlap, per-run
// outcomes, cancel, and destruction.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/chain_graph.hpp"
#include "support/support.hpp"

namespace {

class graph_queue : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

using weft::test::chain_graph;

// A graph whose one task waits for `release` (on a pool with workers).
struct gated_graph {
  weft::graph g;
  std::atomic<bool> release{false};
  std::atomic<bool> started{false};
  std::atomic<int> runs{0};
  explicit gated_graph(bool gate) {
    g.emplace([this, gate] {
      started.store(true);
      while (gate && !release.load()) std::this_thread::yield();
      runs.fetch_add(1);
    });
  }
};

TEST_P(graph_queue, runs_queue_in_call_order_and_never_overlap) {
  weft::pool pool{options()};
  chain_graph cg;
  constexpr int n = 100;
  std::vector<weft::future<void>> runs;
  runs.reserve(n);
  for (int i = 0; i < n; ++i) runs.push_back(pool.run(cg.g));
  for (int i = 0; i < n; ++i) {
    runs[static_cast<std::size_t>(i)].get();
    // The i-th future is ready only after the runs called before it.
    EXPECT_GE(cg.runs.load(), i + 1);
  }
  EXPECT_EQ(cg.runs.load(), n);
  EXPECT_EQ(cg.plain, 3 * n);
  EXPECT_FALSE(cg.g.running());
}

TEST_P(graph_queue, runs_from_several_threads_all_run_once) {
  weft::pool pool{options()};
  chain_graph cg;
  constexpr int threads = 4;
  const int each = static_cast<int>(weft::test::scaled(200, 10));
  std::vector<std::thread> callers;
  callers.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    callers.emplace_back([&] {
      std::vector<weft::future<void>> mine;
      for (int i = 0; i < each; ++i) {
        if (i % 3 == 0) {
          mine.push_back(pool.run_n(cg.g, 2));
        } else {
          mine.push_back(pool.run(cg.g));
        }
      }
      for (auto& f : mine) f.get();
    });
  }
  for (auto& c : callers) c.join();
  const int run_n_calls = threads * ((each + 2) / 3);
  const int expected = threads * each + run_n_calls;  // run_n(g, 2) runs twice
  EXPECT_EQ(cg.runs.load(), expected);
  EXPECT_EQ(cg.plain, 3L * expected);
}

TEST_P(graph_queue, each_queued_run_has_its_own_outcome) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> calls{0};
  g.emplace([&] {
    if (calls.fetch_add(1) == 1) throw std::runtime_error("second run");
  });
  auto first = pool.run(g);
  auto second = pool.run(g);
  auto third = pool.run(g);
  EXPECT_NO_THROW(first.get());
  EXPECT_THROW(second.get(), std::runtime_error);
  EXPECT_NO_THROW(third.get());
  EXPECT_EQ(calls.load(), 3);
}

TEST_P(graph_queue, cancelling_a_queued_run_skips_only_that_run) {
  weft::pool pool{options()};
  gated_graph gg{GetParam() != 0};
  auto first = pool.run(gg.g);
  auto second = pool.run(gg.g);
  auto third = pool.run(gg.g);
  EXPECT_TRUE(second.cancel());
  gg.release.store(true);
  EXPECT_NO_THROW(first.get());
  EXPECT_THROW(second.get(), weft::run_cancelled);
  EXPECT_NO_THROW(third.get());
  EXPECT_EQ(gg.runs.load(), 2);
}

TEST_P(graph_queue, graph_cancel_reaches_the_queued_runs_too) {
  if (GetParam() == 0) GTEST_SKIP() << "a sequential pool runs nothing before the first get()";
  weft::pool pool{options()};
  gated_graph gg{true};
  auto first = pool.run(gg.g);
  auto second = pool.run(gg.g);
  auto third = pool.run_n(gg.g, 5);
  while (!gg.started.load()) std::this_thread::yield();
  EXPECT_TRUE(gg.g.cancel());
  gg.release.store(true);
  EXPECT_THROW(first.get(), weft::run_cancelled);  // it had started: the rest of it is skipped
  EXPECT_THROW(second.get(), weft::run_cancelled);
  EXPECT_THROW(third.get(), weft::run_cancelled);
  EXPECT_EQ(gg.runs.load(), 1);  // only the task that was running when cancel came
  EXPECT_FALSE(gg.g.cancel());   // nothing left to cancel
  pool.run(gg.g).get();
  EXPECT_EQ(gg.runs.load(), 2);
}

TEST_P(graph_queue, dropped_futures_of_queued_runs) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> calls{0};
  std::atomic<bool> release{false};
  g.emplace([&] {
    const int call = calls.fetch_add(1);
    if (call == 2) throw std::runtime_error("third run");
    // The sixth run holds its worker until the seventh is cancelled: were
    // it to end first, the seventh could start before cancel() and run.
    while (call == 5 && !release.load()) std::this_thread::yield();
  });
  for (int i = 0; i < 5; ++i) (void)pool.run(g);
  // The failed run's exception goes to the pool's error path.
  EXPECT_THROW(pool.wait(), std::runtime_error);
  EXPECT_EQ(calls.load(), 5);
  // A cancelled queued run whose future is dropped reports nothing.
  auto kept = pool.run(g);
  {
    auto dropped = pool.run(g);
    EXPECT_TRUE(dropped.cancel());
  }
  release.store(true);
  EXPECT_NO_THROW(kept.get());
  EXPECT_NO_THROW(pool.wait());
  EXPECT_EQ(calls.load(), 6);
}

TEST_P(graph_queue, destroying_a_graph_waits_for_its_queued_runs) {
  weft::pool pool{options()};
  std::atomic<int> runs{0};
  std::vector<weft::future<void>> kept;
  {
    weft::graph g;
    auto a = g.emplace([&] { runs.fetch_add(1); });
    auto b = g.emplace([] {});
    a.precede(b);
    for (int i = 0; i < 20; ++i) {
      if (i % 2 == 0) {
        kept.push_back(pool.run(g));
      } else {
        (void)pool.run(g);
      }
    }
  }
  EXPECT_EQ(runs.load(), 20);
  for (auto& f : kept) EXPECT_TRUE(f.ready());
}

TEST_P(graph_queue, a_task_running_its_own_graph_is_refused) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> refused{0};
  g.emplace([&] {
    try {
      (void)pool.run(g);
    } catch (const weft::graph_error&) {
      refused.fetch_add(1);
    }
    try {
      (void)pool.run_n(g, 2);
    } catch (const weft::graph_error&) {
      refused.fetch_add(1);
    }
  });
  pool.run(g).get();
  EXPECT_EQ(refused.load(), 2);
  EXPECT_FALSE(g.running());
}

TEST_P(graph_queue, a_module_run_twice_at_once_queues) {
  weft::pool pool{options()};
  chain_graph inner;
  weft::graph outer;
  auto m1 = outer.compose(inner.g);
  auto m2 = outer.compose(inner.g);
  auto end = outer.emplace([] {});
  m1.precede(end);
  m2.precede(end);
  pool.run_n(outer, 10).get();
  EXPECT_EQ(inner.runs.load(), 20);
  EXPECT_EQ(inner.plain, 60);
}

thread_local bool on_second_pool = false;

TEST_P(graph_queue, a_run_queued_from_another_pool_runs_there) {
  if (GetParam() == 0) GTEST_SKIP() << "needs workers to tell the pools apart";
  weft::pool first{options()};
  weft::pool_options marked = options();
  marked.on_worker_start = [](std::size_t) { on_second_pool = true; };
  weft::pool second{marked};
  std::atomic<bool> release{false};
  std::atomic<int> ran_on_second{0};
  weft::graph g;
  g.emplace([&] {
    while (!release.load()) std::this_thread::yield();
    if (on_second_pool) ran_on_second.fetch_add(1);
  });
  auto a = first.run(g);
  auto b = second.run(g);  // queued; started by first's worker on second
  release.store(true);
  a.get();
  b.get();
  EXPECT_EQ(ran_on_second.load(), 1);
  EXPECT_FALSE(g.running());
}

INSTANTIATE_TEST_SUITE_P(workers, graph_queue, ::testing::Values(0, 1, 2, 4, 8),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
