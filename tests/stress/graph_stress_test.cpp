// weft::graph under load: random DAGs checked against a sequential run,
// thousands of reruns, cancellation racing with execution, exceptions at
// random tasks. Iteration counts scale with WEFT_STRESS_SCALE.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>
#include <weft/weft.hpp>

#include "support/replace_new.hpp"
#include "support/support.hpp"

// Counts heap allocations program-wide (all threads) while the hook is set,
// to check that a graph run allocates nothing.
#ifdef WEFT_TEST_REPLACES_NEW
namespace {
std::atomic<std::size_t> allocations{0};
void count_allocation() { allocations.fetch_add(1, std::memory_order_relaxed); }

// The heap allocations, program-wide, while f() runs `rounds` times.
template <class F>
std::size_t allocations_during(int rounds, F&& f) {
  allocations = 0;
  weft::test::allocation_hook.store(&count_allocation, std::memory_order_relaxed);
  for (int r = 0; r < rounds; ++r) f();
  weft::test::allocation_hook.store(nullptr, std::memory_order_relaxed);
  return allocations.load();
}
}  // namespace
#endif

namespace {

class graph_stress : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

using weft::test::mix;

// A random DAG: task i's predecessors come before it in a hidden order
// (`order`), which differs from the order tasks are added to the graph.
struct random_dag {
  std::size_t size = 0;
  std::vector<std::vector<std::size_t>> preds;  // by task id, in edge order
  std::vector<std::size_t> order;               // a topological order of ids
  std::vector<bool> placeholder;

  random_dag(std::mt19937_64& rng, std::size_t n) : size(n), preds(n), placeholder(n) {
    order.resize(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::shuffle(order.begin(), order.end(), rng);
    const std::size_t max_preds = 1 + rng() % 6;
    for (std::size_t pos = 1; pos < n; ++pos) {
      const std::size_t id = order[pos];
      const std::size_t k = rng() % (max_preds + 1);
      for (std::size_t e = 0; e < k; ++e) {
        // Mostly recent tasks (long chains), sometimes any earlier one.
        const std::size_t window = rng() % 4 == 0 ? pos : std::min<std::size_t>(pos, 16);
        preds[id].push_back(order[pos - 1 - rng() % window]);
      }
    }
    for (std::size_t i = 0; i < n; ++i) placeholder[i] = rng() % 20 == 0;
  }

  [[nodiscard]] std::uint64_t value_of(std::size_t id, const std::vector<std::uint64_t>& v) const {
    std::uint64_t h = mix(id);
    for (const std::size_t p : preds[id]) h = mix(h ^ v[p]);
    return h;
  }

  [[nodiscard]] std::vector<std::uint64_t> sequential() const {
    std::vector<std::uint64_t> v(size, 0);
    for (const std::size_t id : order) v[id] = placeholder[id] ? 0 : value_of(id, v);
    return v;
  }
};

// Builds g from dag, writing into values; tasks are added in id order.
std::vector<weft::task> build(weft::graph& g, const random_dag& dag,
                              std::vector<std::uint64_t>& values) {
  std::vector<weft::task> tasks;
  tasks.reserve(dag.size);
  for (std::size_t id = 0; id < dag.size; ++id) {
    if (dag.placeholder[id]) {
      tasks.push_back(g.placeholder());
    } else {
      tasks.push_back(g.emplace([&dag, &values, id] { values[id] = dag.value_of(id, values); }));
    }
  }
  for (std::size_t id = 0; id < dag.size; ++id) {
    for (const std::size_t p : dag.preds[id]) tasks[id].succeed(tasks[p]);
  }
  return tasks;
}

TEST_P(graph_stress, random_dags_match_a_sequential_run) {
  weft::pool pool{options()};
  std::mt19937_64 rng(0x5EED0000 + GetParam());
  const std::size_t shapes = weft::test::scaled(100, 10);
  for (std::size_t shape = 0; shape < shapes; ++shape) {
    std::size_t n = 1 + rng() % 300;
    if (shape % 25 == 0) n = weft::test::scaled(10'000, 1'000);
    const random_dag dag(rng, n);
    const std::vector<std::uint64_t> expected = dag.sequential();
    std::vector<std::uint64_t> values(n, 0);
    weft::graph g;
    build(g, dag, values);
    for (int run = 0; run < 2; ++run) {
      std::fill(values.begin(), values.end(), 0);
      pool.run(g).get();
      ASSERT_EQ(values, expected) << "shape " << shape << " (" << n << " tasks), run " << run;
    }
  }
}

TEST_P(graph_stress, reruns_allocate_nothing) {
#ifndef WEFT_TEST_REPLACES_NEW
  GTEST_SKIP() << "allocations are not counted under the sanitizers";
#else
  if (GetParam() == 0) {
    GTEST_SKIP() << "sequential mode queues jobs in a std::deque, which allocates as it cycles";
  }
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<int> sum{0};
  auto top = g.emplace([&] { sum.fetch_add(1); });
  auto bottom = g.placeholder();
  for (int i = 0; i < 50; ++i) {
    auto mid = g.emplace([&] { sum.fetch_add(1); });
    top.precede(mid);
    mid.precede(bottom);
  }
  // Warm up: the first run checks the graph, makes the run state, and lets
  // the pool's queues reach their working size.
  for (int r = 0; r < 20; ++r) pool.run(g).get();
  EXPECT_EQ(allocations_during(200, [&] { pool.run(g).get(); }), 0U);
  EXPECT_EQ(sum.load(), 220 * 51);
  // Queued runs reuse their states too (after one round has made them).
  auto queued_round = [&] {
    auto a = pool.run(g);
    auto b = pool.run(g);
    auto c = pool.run_n(g, 2);
    a.get();
    b.get();
    c.get();
  };
  for (int r = 0; r < 5; ++r) queued_round();
  EXPECT_EQ(allocations_during(100, queued_round), 0U);
  EXPECT_EQ(sum.load(), (220 + 105 * 4) * 51);
#endif
}

TEST_P(graph_stress, a_held_future_does_not_cost_the_graph_a_state) {
#ifndef WEFT_TEST_REPLACES_NEW
  GTEST_SKIP() << "allocations are not counted under the sanitizers";
#else
  if (GetParam() == 0) GTEST_SKIP() << "needs a worker to run a while the caller queues b";
  // The caller keeps the futures of finished runs while it starts another:
  // run a (held back by its first task), queue b, let both finish, then run
  // c with a's and b's futures still held. c needs a state other than
  // theirs; the one b used must stay the graph's, to be reused next round,
  // not go with b's future (which cost a new state every round).
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<bool> open{true};
  std::atomic<int> runs{0};
  g.emplace([&] {
    while (!open.load()) std::this_thread::yield();
    runs.fetch_add(1);
  });
  auto round = [&] {
    open = false;
    auto a = pool.run(g);
    auto b = pool.run(g);  // queued behind a
    open = true;
    b.wait();              // b's future still holds its state
    auto c = pool.run(g);  // a and b finished, their futures held
    c.get();
    a.get();
    b.get();
  };
  for (int r = 0; r < 3; ++r) round();
  EXPECT_EQ(allocations_during(20, round), 0U);
  EXPECT_EQ(runs.load(), 23 * 3);
#endif
}

TEST_P(graph_stress, ten_thousand_reruns) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<std::uint64_t> sum{0};
  auto source = g.emplace([&] { sum.fetch_add(1, std::memory_order_relaxed); });
  auto sink = g.placeholder();
  weft::task prev = source;
  for (int i = 0; i < 8; ++i) {
    auto wide = g.emplace([&] { sum.fetch_add(10, std::memory_order_relaxed); });
    auto chain = g.emplace([&] { sum.fetch_add(100, std::memory_order_relaxed); });
    source.precede(wide);
    prev.precede(chain);
    wide.precede(sink);
    prev = chain;
  }
  prev.precede(sink);
  const std::size_t runs = weft::test::scaled(10'000, 500);
  for (std::size_t r = 0; r < runs; ++r) pool.run(g).get();
  EXPECT_EQ(sum.load(), runs * 881);
}

TEST_P(graph_stress, cancelling_a_run_races_with_execution) {
  weft::pool pool{options()};
  constexpr std::size_t n = 2'000;
  weft::graph g;
  std::vector<std::atomic<bool>> ran(n);
  std::vector<weft::task> tasks;
  for (std::size_t i = 0; i < n; ++i) {
    tasks.push_back(g.emplace([&ran, i] { ran[i].store(true, std::memory_order_relaxed); }));
  }
  // A binary tree: task i follows task (i - 1) / 2.
  for (std::size_t i = 1; i < n; ++i) tasks[i].succeed(tasks[(i - 1) / 2]);
  std::mt19937_64 rng(42);
  const std::size_t rounds = weft::test::scaled(300, 20);
  std::size_t cancelled_runs = 0;
  for (std::size_t r = 0; r < rounds; ++r) {
    for (auto& flag : ran) flag.store(false, std::memory_order_relaxed);
    // Fresh gates: task::cancel() then reports on this run alone.
    for (auto& t : tasks) t.reset();
    const std::size_t victim = rng() % n;
    const auto delay = std::chrono::microseconds(rng() % 200);
    auto f = pool.run(g);
    std::thread canceller([&] {
      std::this_thread::sleep_for(delay);
      g.cancel();
    });
    const bool task_cancelled = tasks[victim].cancel();
    bool run_cancelled = false;
    try {
      f.get();
    } catch (const weft::run_cancelled&) {
      run_cancelled = true;
      ++cancelled_runs;
    }
    canceller.join();
    // cancel() is true exactly when the task did not run.
    EXPECT_EQ(task_cancelled, !ran[victim].load(std::memory_order_relaxed)) << "round " << r;
    // What ran is closed under predecessors; a complete run was not cancelled.
    std::size_t count = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const bool here = ran[i].load(std::memory_order_relaxed);
      count += here ? 1 : 0;
      if (i > 0 && here) {
        ASSERT_TRUE(ran[(i - 1) / 2].load(std::memory_order_relaxed)) << "round " << r;
      }
    }
    if (!run_cancelled && !task_cancelled) {
      EXPECT_EQ(count, n);
    }
  }
  RecordProperty("cancelled_runs", static_cast<int>(cancelled_runs));
}

TEST_P(graph_stress, exceptions_at_random_tasks) {
  weft::pool pool{options()};
  std::mt19937_64 rng(7 + GetParam());
  const std::size_t shapes = weft::test::scaled(60, 6);
  for (std::size_t shape = 0; shape < shapes; ++shape) {
    const std::size_t n = 1 + rng() % 500;
    const random_dag dag(rng, n);
    std::vector<std::atomic<int>> throws(n);
    std::vector<std::atomic<bool>> ran(n);
    const std::size_t throwers = 1 + rng() % 3;
    for (std::size_t t = 0; t < throwers; ++t) throws[rng() % n].store(1);
    weft::graph g;
    std::vector<weft::task> tasks;
    for (std::size_t id = 0; id < n; ++id) {
      tasks.push_back(g.emplace([&throws, &ran, id] {
        ran[id].store(true, std::memory_order_relaxed);
        if (throws[id].load(std::memory_order_relaxed) != 0) throw std::runtime_error("task");
      }));
    }
    for (std::size_t id = 0; id < n; ++id) {
      for (const std::size_t p : dag.preds[id]) tasks[id].succeed(tasks[p]);
    }
    bool threw = false;
    try {
      pool.run(g).get();
    } catch (const std::runtime_error&) {
      threw = true;
    }
    // No successor of a task that threw ran.
    bool any_thrower_ran = false;
    for (std::size_t id = 0; id < n; ++id) {
      const bool thrower = throws[id].load() != 0 && ran[id].load();
      any_thrower_ran = any_thrower_ran || thrower;
    }
    EXPECT_EQ(threw, any_thrower_ran);
    for (std::size_t id = 0; id < n; ++id) {
      for (const std::size_t p : dag.preds[id]) {
        if (throws[p].load() != 0 && ran[p].load()) {
          ASSERT_FALSE(ran[id].load()) << "a successor of a failed task ran";
        }
      }
    }
    // With nothing throwing, the same graph runs completely.
    for (auto& t : throws) t.store(0);
    for (auto& r : ran) r.store(false);
    pool.run(g).get();
    EXPECT_TRUE(std::all_of(ran.begin(), ran.end(), [](const auto& r) { return r.load(); }));
  }
}

// Several threads queue runs and sequences of one graph, cancel some and
// drop others, with random pauses inside the tasks: runs never overlap (a
// plain counter per task, checked by ThreadSanitizer and by the counts),
// every future ends, and a run that is not cancelled runs every task.
TEST_P(graph_stress, queued_runs_from_racing_threads) {
  weft::pool pool{options()};
  constexpr std::size_t width = 6;
  weft::graph g;
  std::vector<long> plain(width, 0);  // touched by one run at a time
  std::atomic<long> completed{0};     // runs whose last task ran
  weft::task prev;
  for (std::size_t i = 0; i < width; ++i) {
    auto t = g.emplace([&plain, &completed, i] {
      ++plain[i];
      if ((mix(static_cast<std::uint64_t>(plain[i]) * 31 + i) & 7) == 0) std::this_thread::yield();
      if (i + 1 == width) completed.fetch_add(1, std::memory_order_relaxed);
    });
    if (i != 0) prev.precede(t);
    prev = t;
  }
  const std::size_t rounds = weft::test::scaled(2'000, 50);
  constexpr int threads = 3;
  std::atomic<long> succeeded{0};  // runs of futures that ended without error
  std::vector<std::thread> callers;
  callers.reserve(threads);
  for (int c = 0; c < threads; ++c) {
    callers.emplace_back([&, c] {
      std::vector<std::pair<weft::future<void>, long>> mine;
      for (std::size_t r = 0; r < rounds; ++r) {
        const std::uint64_t x = mix(r * 131 + static_cast<std::uint64_t>(c));
        const long n = static_cast<long>(x % 3) + 1;
        weft::future<void> f = n == 1 ? pool.run(g) : pool.run_n(g, static_cast<std::size_t>(n));
        if ((x >> 8) % 10 == 0) (void)f.cancel();
        if ((x >> 16) % 5 == 0) continue;  // dropped: it still runs (or is skipped if cancelled)
        mine.emplace_back(std::move(f), n);
        if ((x >> 24) % 7 == 0) std::this_thread::yield();
      }
      for (auto& [f, n] : mine) {
        try {
          f.get();
          succeeded.fetch_add(n);
        } catch (const weft::run_cancelled&) {
        }
      }
    });
  }
  for (auto& t : callers) t.join();
  pool.wait();
  EXPECT_FALSE(g.running());
  // A cancelled run stops part-way: each task ran at most as often as the
  // one before it, and at least as often as the runs that completed.
  for (std::size_t i = 1; i < width; ++i) EXPECT_LE(plain[i], plain[i - 1]);
  EXPECT_EQ(plain[width - 1], completed.load());
  EXPECT_GE(completed.load(), succeeded.load());
  EXPECT_GT(succeeded.load(), 0);
}

// Random trees of nested subflows, joined and detached, rebuilt every run,
// with an exception at a random leaf in some runs: a run without one counts
// every leaf exactly once, and its successor sees every joined leaf done;
// a run with one throws it, and the graph runs normally afterwards.
struct subflow_tree {
  std::uint64_t seed = 0;
  std::uint64_t throw_at = 0;  // leaves whose id is throw_at modulo 97 throw; 0: none
  std::atomic<std::uint64_t> leaves{0};

  [[nodiscard]] std::uint64_t choices(std::uint64_t id) const {
    return mix(seed ^ (id * 0x9e3779b97f4a7c15ULL));
  }
  [[nodiscard]] static bool detaches(std::uint64_t x) { return (x >> 8) % 4 == 0; }
  [[nodiscard]] static std::uint64_t fan(std::uint64_t x) { return (x >> 16) % 4 + 1; }

  // The leaves under the children of node `id` at `depth`, as build() makes
  // them; joined_count counts those the root's successor must see done.
  std::uint64_t count(std::uint64_t id, int depth, bool joined, std::uint64_t& joined_count) const {
    const std::uint64_t x = choices(id);
    const bool under_joined = joined && !detaches(x);
    std::uint64_t n = 0;
    for (std::uint64_t k = 0; k < fan(x); ++k) {
      const std::uint64_t child = id * 4 + k + 1;
      if (depth == 1 || choices(child) % 5 == 0) {
        if (under_joined) ++joined_count;
        ++n;
      } else {
        n += count(child, depth - 1, under_joined, joined_count);
      }
    }
    return n;
  }
  void build(weft::subflow& sf, std::uint64_t id, int depth) {
    const std::uint64_t x = choices(id);
    if (detaches(x)) sf.detach();
    for (std::uint64_t k = 0; k < fan(x); ++k) {
      const std::uint64_t child = id * 4 + k + 1;
      if (depth == 1 || choices(child) % 5 == 0) {
        sf.emplace([this, child] { leaf(child); });
      } else {
        sf.emplace([this, child, depth](weft::subflow& s) { build(s, child, depth - 1); });
      }
    }
  }
  void leaf(std::uint64_t id) {
    if ((id & 3) == 0) std::this_thread::yield();
    if (throw_at != 0 && id % 97 == throw_at % 97) throw std::runtime_error("leaf");
    leaves.fetch_add(1, std::memory_order_relaxed);
  }
};

TEST_P(graph_stress, random_subflow_trees) {
  weft::pool pool{options()};
  subflow_tree tree;
  weft::graph g;
  std::uint64_t seen_by_successor = 0;
  auto root = g.emplace([&](weft::subflow& sf) { tree.build(sf, 0, 4); });
  auto after = g.emplace([&] { seen_by_successor = tree.leaves.load(std::memory_order_relaxed); });
  root.precede(after);
  const std::size_t rounds = weft::test::scaled(400, 20);
  std::size_t failed_runs = 0;
  std::uint64_t total = 0;
  for (std::size_t r = 0; r < rounds; ++r) {
    tree.seed = mix(r + 1);
    tree.throw_at = r % 8 == 7 ? mix(r) % 1000 + 1 : 0;
    tree.leaves = 0;
    std::uint64_t joined = 0;
    const std::uint64_t want = tree.count(0, 4, true, joined);
    total += want;
    try {
      pool.run(g).get();
    } catch (const std::runtime_error&) {
      ASSERT_NE(tree.throw_at, 0U) << "round " << r;
      ++failed_runs;
      continue;  // a leaf matched throw_at
    }
    // A leaf that threw and was lost would leave the count one short.
    ASSERT_EQ(tree.leaves.load(), want) << "round " << r;
    ASSERT_GE(seen_by_successor, joined) << "round " << r;
  }
  EXPECT_LT(failed_runs, rounds);
  EXPECT_GT(total, rounds * 10);  // trees of some size, not single leaves
}

INSTANTIATE_TEST_SUITE_P(workers, graph_stress, ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
