// weft's parallel algorithms: ranges of every size, the combination order,
// result order, nesting, callers outside and inside the pool, exceptions,
// misuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <ranges>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <weft/algorithm.hpp>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;

class algorithm_test : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
  [[nodiscard]] bool sequential() const { return GetParam() == 0; }
};

// Busy for about `d` (a sleep would hand the CPU to the other workers).
void spin_for(std::chrono::microseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// One counter per thread that runs elements, on a line of its own; indexed
// by this_worker::index() (the last slot for threads that are not workers).
struct per_thread_sums {
  struct alignas(64) slot {
    std::uint64_t count = 0;
    std::uint64_t sum = 0;
    std::uint64_t hash = 0;
  };
  explicit per_thread_sums(std::size_t workers) : slots(workers + 2) {}
  slot& mine() {
    const std::optional<std::size_t> i = weft::this_worker::index();
    return slots[i ? *i : slots.size() - 1];
  }
  [[nodiscard]] slot total() const {
    slot t;
    for (const slot& s : slots) {
      t.count += s.count;
      t.sum += s.sum;
      t.hash ^= s.hash;
    }
    return t;
  }
  std::vector<slot> slots;
};

TEST_P(algorithm_test, empty_ranges_call_nothing_and_reduce_returns_init) {
  weft::pool pool{options()};
  std::vector<int> v;
  std::atomic<int> calls{0};
  weft::for_each(pool, v.begin(), v.end(), [&](int) { calls.fetch_add(1); });
  weft::for_each_index(pool, 7, 7, [&](int) { calls.fetch_add(1); });
  std::vector<int> out;
  EXPECT_EQ(weft::transform(pool, v.begin(), v.end(), out.begin(),
                            [&](int x) {
                              calls.fetch_add(1);
                              return x;
                            }),
            out.begin());
  std::vector<std::string> no_words;
  EXPECT_EQ(weft::reduce(pool, no_words.begin(), no_words.end(), std::string("init"),
                         [&](std::string a, const std::string& b) {
                           calls.fetch_add(1);
                           return a + b;
                         }),
            "init");
  EXPECT_EQ(weft::transform_reduce(pool, v.begin(), v.end(), 42, std::plus<>{},
                                   [&](int x) {
                                     calls.fetch_add(1);
                                     return x;
                                   }),
            42);
  EXPECT_TRUE(weft::map(pool, v, [&](int x) {
                calls.fetch_add(1);
                return x;
              }).empty());
  EXPECT_EQ(calls.load(), 0);
}

TEST_P(algorithm_test, one_element_ranges) {
  weft::pool pool{options()};
  std::vector<int> v{5};
  int seen = 0;
  weft::for_each(pool, v.begin(), v.end(), [&](int x) { seen += x; });
  weft::for_each_index(pool, -3, -2, [&](int i) { seen += i; });
  EXPECT_EQ(seen, 2);
  std::vector<int> out(1);
  EXPECT_EQ(weft::transform(pool, v.begin(), v.end(), out.begin(), [](int x) { return x * 3; }),
            out.end());
  EXPECT_EQ(out[0], 15);
  EXPECT_EQ(weft::reduce(pool, v.begin(), v.end(), 1), 6);
  EXPECT_EQ(weft::transform_reduce(pool, v.begin(), v.end(), std::string("<"), std::plus<>{},
                                   [](int x) { return std::to_string(x); }),
            "<5");
  EXPECT_EQ(weft::map(pool, v, [](int x) { return x + 1; }), std::vector<int>{6});
}

TEST_P(algorithm_test, for_each_index_visits_a_huge_range_exactly_once) {
  // 10^8 indices in release (scaled down under the sanitizers): a count, a
  // sum and an order-independent hash of the indices seen, per thread.
  weft::pool pool{options()};
  const auto n = static_cast<std::int64_t>(weft::test::scaled(100'000'000));
  per_thread_sums sums{GetParam()};
  weft::for_each_index(pool, std::int64_t{0}, n, [&](std::int64_t i) {
    per_thread_sums::slot& s = sums.mine();
    ++s.count;
    s.sum += static_cast<std::uint64_t>(i);
    s.hash ^= weft::test::mix(static_cast<std::uint64_t>(i));
  });
  const per_thread_sums::slot t = sums.total();
  std::uint64_t hash = 0;
  for (std::int64_t i = 0; i < n; ++i) hash ^= weft::test::mix(static_cast<std::uint64_t>(i));
  const auto un = static_cast<std::uint64_t>(n);
  EXPECT_EQ(t.count, un);
  EXPECT_EQ(t.sum, un * (un - 1) / 2);
  EXPECT_EQ(t.hash, hash);
}

TEST_P(algorithm_test, every_element_is_visited_exactly_once) {
  weft::pool pool{options()};
  const std::size_t n = weft::test::scaled(1'000'000);
  std::vector<std::atomic<int>> visits(n);
  std::vector<std::size_t> items(n);
  std::iota(items.begin(), items.end(), std::size_t{0});
  for (const std::size_t g : {std::size_t{1}, std::size_t{7}, std::size_t{4096}, n}) {
    for (auto& c : visits) c.store(0);
    weft::for_each(
        pool, items.begin(), items.end(), [&](std::size_t i) { visits[i].fetch_add(1); },
        weft::grain{g});
    EXPECT_TRUE(std::all_of(visits.begin(), visits.end(), [](const auto& c) { return c == 1; }))
        << "grain " << g;
  }
  // Negative and unsigned index ranges, and ones that span the signed limits.
  std::atomic<std::int64_t> sum{0};
  weft::for_each_index(pool, -1000, 1002, [&](int i) { sum.fetch_add(i); });
  EXPECT_EQ(sum.load(), 1001);
  std::atomic<std::uint64_t> usum{0};
  weft::for_each_index(pool, std::size_t{10}, std::size_t{20},
                       [&](std::size_t i) { usum.fetch_add(i); });
  EXPECT_EQ(usum.load(), 145U);
  std::atomic<int> edges{0};
  weft::for_each_index(pool, std::int8_t{-128}, std::int8_t{127}, [&](std::int8_t i) {
    edges.fetch_add(1);
    EXPECT_LE(i, 126);
  });
  EXPECT_EQ(edges.load(), 255);
}

TEST_P(algorithm_test, transform_writes_every_output_and_works_in_place) {
  weft::pool pool{options()};
  const std::size_t n = weft::test::scaled(200'000);
  std::vector<std::int64_t> in(n);
  std::iota(in.begin(), in.end(), std::int64_t{-5});
  std::vector<std::int64_t> out(n, -1);
  auto end = weft::transform(pool, in.begin(), in.end(), out.begin(),
                             [](std::int64_t x) { return x * x; });
  EXPECT_EQ(end, out.end());
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], in[i] * in[i]) << i;
  weft::transform(pool, in.begin(), in.end(), in.begin(), [](std::int64_t x) { return x + 1; });
  EXPECT_EQ(in.front(), -4);
  EXPECT_EQ(in.back(), static_cast<std::int64_t>(n) - 5);
  // A std::deque and a pointer range: any random-access iterator.
  std::deque<int> d(1000, 2);
  std::array<int, 1000> a{};
  weft::transform(pool, d.begin(), d.end(), a.data(), [](int x) { return x * 5; });
  EXPECT_TRUE(std::all_of(a.begin(), a.end(), [](int x) { return x == 10; }));
}

TEST_P(algorithm_test, non_commutative_reductions_equal_the_sequential_result) {
  // String concatenation is associative but not commutative: any order but
  // init, x0, x1, ... would show. Small grains force many pieces.
  weft::pool pool{options()};
  const std::size_t n = weft::test::scaled(20'000, 100);
  std::vector<std::string> words(n);
  for (std::size_t i = 0; i < n; ++i) words[i] = std::string(1, static_cast<char>('a' + i % 26));
  const std::string expected = std::accumulate(words.begin(), words.end(), std::string("init:"));
  const auto concat = [](std::string a, const std::string& b) { return std::move(a) += b; };
  for (int run = 0; run < 5; ++run) {
    for (const std::size_t g : {std::size_t{1}, std::size_t{3}, std::size_t{100}}) {
      EXPECT_EQ(weft::reduce(pool, words.begin(), words.end(), std::string("init:"), concat,
                             weft::grain{g}),
                expected)
          << "grain " << g << ", run " << run;
    }
  }
  // transform_reduce: strings made on the fly from indices.
  std::vector<int> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::string expected_digits = "#";
  for (int i : idx) expected_digits += std::to_string(i % 10);
  EXPECT_EQ(weft::transform_reduce(
                pool, idx.begin(), idx.end(), std::string("#"), std::plus<>{},
                [](int i) { return std::to_string(i % 10); }, weft::grain{2}),
            expected_digits);
  // 2x2 integer matrix products (mod 2^64) do not commute either.
  using mat = std::array<std::uint64_t, 4>;
  const auto mul = [](const mat& x, const mat& y) {
    return mat{x[0] * y[0] + x[1] * y[2], x[0] * y[1] + x[1] * y[3], x[2] * y[0] + x[3] * y[2],
               x[2] * y[1] + x[3] * y[3]};
  };
  std::vector<mat> ms(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t r = weft::test::mix(i);
    ms[i] = mat{r & 7, (r >> 3) & 7, (r >> 6) & 7, (r >> 9) & 7};
  }
  const mat one{1, 0, 0, 1};
  const mat seq = std::accumulate(ms.begin(), ms.end(), one, mul);
  EXPECT_EQ(weft::reduce(pool, ms.begin(), ms.end(), one, mul), seq);
}

TEST_P(algorithm_test, map_returns_results_in_input_order) {
  weft::pool pool{options()};
  const std::size_t n = weft::test::scaled(100'000);
  const std::vector<std::int64_t> squares =
      weft::map(pool, std::views::iota(std::int64_t{0}, static_cast<std::int64_t>(n)),
                [](std::int64_t i) { return i * i; });
  ASSERT_EQ(squares.size(), n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(squares[i], static_cast<std::int64_t>(i * i));
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  const std::vector<bool> odd = weft::map(pool, v, [](int x) { return x % 2 == 1; });
  ASSERT_EQ(odd.size(), n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(odd[i], i % 2 == 1);
  const std::vector<std::string> names = weft::map(
      pool, v, [](const int& x) { return std::to_string(x); }, weft::grain{64});
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(names[i], std::to_string(i));
}

TEST_P(algorithm_test, a_grain_of_the_whole_range_runs_in_index_order_on_one_thread) {
  weft::pool pool{options()};
  std::vector<int> order;  // deliberately unsynchronised: one thread only
  std::vector<int> v(1000);
  std::iota(v.begin(), v.end(), 0);
  weft::for_each(
      pool, v.begin(), v.end(), [&](int x) { order.push_back(x); }, weft::grain{1000});
  EXPECT_EQ(order, v);
}

TEST_P(algorithm_test, sequential_mode_runs_in_index_order_even_nested) {
  if (!sequential()) GTEST_SKIP() << "sequential mode only";
  weft::pool pool{options()};
  std::vector<int> order;
  weft::for_each_index(pool, 0, 50, [&](int i) {
    weft::for_each_index(pool, 0, 20, [&](int j) { order.push_back(i * 20 + j); });
  });
  std::vector<int> expected(1000);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
}

TEST_P(algorithm_test, slow_bodies_spread_over_the_workers) {
  // Splitting on demand must hand pieces to idle workers: with 2+ workers a
  // loop of 200 bodies of 100 us is not run by one thread alone.
  if (GetParam() < 2) GTEST_SKIP() << "needs two workers";
  weft::pool pool{options()};
  std::mutex m;
  std::set<std::size_t> threads;
  auto seen = [&] {
    const std::lock_guard lock{m};
    return threads.size();
  };
  weft::for_each_index(pool, 0, 200, [&](int i) {
    spin_for(100us);
    {
      const std::lock_guard lock{m};
      threads.insert(weft::this_worker::index().value_or(99));
    }
    // The first body waits (at most 10 s) for a body on another thread: the
    // 20 ms of bodies alone can end before the other workers get a CPU on a
    // loaded machine, and then one thread may rightly run them all.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    while (i == 0 && seen() < 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
  });
  EXPECT_GE(threads.size(), 2U);
}

TEST_P(algorithm_test, nested_for_each_inside_for_each) {
  weft::pool pool{options()};
  const int outer = 64;
  const int inner = static_cast<int>(weft::test::scaled(2000, 10));
  std::vector<std::atomic<int>> seen(static_cast<std::size_t>(outer * inner));
  std::vector<int> rows(outer);
  std::iota(rows.begin(), rows.end(), 0);
  weft::for_each(pool, rows.begin(), rows.end(), [&](int i) {
    weft::for_each_index(
        pool, 0, inner, [&](int j) { seen[static_cast<std::size_t>(i * inner + j)].fetch_add(1); });
  });
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](const auto& c) { return c == 1; }));
  // Nested reductions inside a map, three levels deep.
  const std::vector<long> sums = weft::map(pool, rows, [&](int i) {
    std::vector<int> cols(static_cast<std::size_t>(inner));
    std::iota(cols.begin(), cols.end(), 0);
    return weft::transform_reduce(pool, cols.begin(), cols.end(), 0L, std::plus<>{}, [&](int j) {
      return weft::reduce(pool, rows.begin(), rows.begin() + i, 0L) + j;
    });
  });
  for (int i = 0; i < outer; ++i) {
    const long tri = static_cast<long>(i) * (i - 1) / 2;
    EXPECT_EQ(sums[static_cast<std::size_t>(i)],
              tri * inner + static_cast<long>(inner) * (inner - 1) / 2);
  }
}

TEST_P(algorithm_test, callers_outside_and_inside_the_pool) {
  weft::pool pool{options()};
  std::vector<double> v(weft::test::scaled(100'000));
  std::iota(v.begin(), v.end(), 1.0);
  const double expected = std::accumulate(v.begin(), v.end(), 0.0);
  double from_thread = 0;
  std::thread t([&] { from_thread = weft::reduce(pool, v.begin(), v.end(), 0.0); });
  const double from_job =
      pool.submit([&] { return weft::reduce(pool, v.begin(), v.end(), 0.0); }).get();
  const double from_main = weft::reduce(pool, v.begin(), v.end(), 0.0);
  t.join();
  // The sums of integers below 2^53 are exact in any order.
  EXPECT_EQ(from_thread, expected);
  EXPECT_EQ(from_job, expected);
  EXPECT_EQ(from_main, expected);
  // From a job of another pool, and from inside a join.
  weft::pool other{{.threads = 2}};
  EXPECT_EQ(other.submit([&] { return weft::reduce(pool, v.begin(), v.end(), 0.0); }).get(),
            expected);
  auto both = pool.submit([&] {
    return weft::join([&] { return weft::reduce(pool, v.begin(), v.end(), 0.0); },
                      [&] { return weft::reduce(pool, v.begin(), v.end(), 0.0); });
  });
  const auto [a, b] = both.get();
  EXPECT_EQ(a, expected);
  EXPECT_EQ(b, expected);
}

// Holds every worker of `pool` but the free ones in a spin until the holder
// goes out of scope.
class hold_all_but {
 public:
  hold_all_but(weft::pool& pool, const std::set<std::size_t>& free) {
    for (std::size_t i = 0; i < pool.size(); ++i) {
      if (free.contains(i)) continue;
      holders_.push_back(pool.submit_on(i, [this] {
        held_.fetch_add(1);
        while (!release_.load()) std::this_thread::yield();
      }));
    }
    while (held_.load() < holders_.size()) std::this_thread::yield();
  }
  hold_all_but(const hold_all_but&) = delete;
  hold_all_but& operator=(const hold_all_but&) = delete;
  ~hold_all_but() {
    release_ = true;
    for (auto& h : holders_) h.get();
  }

 private:
  std::atomic<bool> release_{false};
  std::atomic<std::size_t> held_{0};
  std::vector<weft::future<void>> holders_;
};

TEST_P(algorithm_test, a_caller_that_runs_the_loop_itself_forks_on_the_same_pool) {
  // A caller whose pool's workers are all busy runs the loop itself: in a
  // worker's place (two workers or more), or, with waiters_help, as the
  // helper that runs the loop's job. Its forks must stay in that pool
  // (weft::join from a thread that is no worker would use default_pool()):
  // here, every element then runs on the caller.
  if (sequential()) GTEST_SKIP() << "needs workers to hold";
  weft::pool pool{{.threads = GetParam(), .waiters_help = true}};
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> elsewhere{0};
  std::atomic<int> ran{0};
  std::string caught;
  {
    const hold_all_but held{pool, {}};
    try {
      weft::for_each_index(pool, 0, 256, [&](int) {
        ran.fetch_add(1);
        if (std::this_thread::get_id() != caller) elsewhere.fetch_add(1);
        spin_for(2us);
      });
      // The same with exceptions: the left half runs first, here always.
      weft::for_each_index(pool, 0, 256, [&](int i) {
        if (i == 10 || i == 200) throw std::runtime_error(std::to_string(i));
      });
    } catch (const std::runtime_error& e) {
      caught = e.what();
    }
  }
  EXPECT_EQ(ran.load(), 256);
  EXPECT_EQ(elsewhere.load(), 0);
  EXPECT_EQ(caught, "10");
}

// Waits (at most 10 s) until every worker of `pool` has parked at least once,
// so that, with nothing submitted since, each is asleep.
bool wait_until_every_worker_parked(const weft::pool& pool) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  auto all_parked = [&] {
    const weft::pool_stats s = pool.stats();
    return std::all_of(s.per_worker.begin(), s.per_worker.end(),
                       [](const weft::worker_stats& w) { return w.parks > 0; });
  };
  while (!all_parked()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST_P(algorithm_test, an_outside_caller_runs_the_loop_in_a_workers_place) {
  // The caller runs elements itself, and while it does one worker fewer is
  // woken: the loop runs on at most size() threads, the caller among them
  // (a worker of pools of one runs the whole loop: no place to take).
  if (GetParam() < 2) GTEST_SKIP() << "needs two workers";
  weft::pool pool{options()};
  ASSERT_TRUE(wait_until_every_worker_parked(pool));
  std::mutex m;
  std::set<std::thread::id> threads;
  std::set<std::size_t> indices;
  weft::for_each_index(pool, 0, 64, [&](int) {
    spin_for(200us);
    const std::lock_guard lock{m};
    threads.insert(std::this_thread::get_id());
    indices.insert(weft::this_worker::index().value_or(99));
  });
  EXPECT_TRUE(threads.contains(std::this_thread::get_id()));
  EXPECT_TRUE(indices.contains(pool.max_size())) << "the caller holds the helper slot";
  EXPECT_LE(threads.size(), pool.size());
}

TEST_P(algorithm_test, a_job_queued_while_the_caller_stands_in_runs_after_it_leaves) {
  // Worker 0 is held and the others sleep; a job spawned from the caller's
  // loop wakes nobody while the caller stands in for a worker. When the
  // loop returns, the caller must wake a worker for it.
  if (GetParam() < 2) GTEST_SKIP() << "needs two workers";
  weft::pool pool{options()};
  ASSERT_TRUE(wait_until_every_worker_parked(pool));
  std::set<std::size_t> free;
  for (std::size_t i = 1; i < pool.size(); ++i) free.insert(i);
  const hold_all_but held{pool, free};  // wakes worker 0 alone (its mailbox)
  std::atomic<bool> ran{false};
  weft::for_each_index(pool, 0, 1, [&](int) { pool.spawn([&] { ran = true; }); });
  EXPECT_TRUE(weft::test::wait_for(ran));
}

TEST_P(algorithm_test, pool_wait_from_an_element_function_is_a_usage_error) {
  // The loop is a job of the pool (a worker runs the root), or the caller
  // runs it in a worker's place and counts as one: either way pool.wait()
  // from an element would wait for the loop itself.
  if (sequential()) GTEST_SKIP() << "sequential mode runs waits' jobs on the caller";
  weft::pool pool{options()};
  std::atomic<int> refused{0};
  weft::for_each_index(
      pool, 0, 4,
      [&](int) {
        try {
          pool.wait();
        } catch (const weft::usage_error&) {
          refused.fetch_add(1);
        }
      },
      weft::grain{4});
  EXPECT_EQ(refused.load(), 4);
}

TEST_P(algorithm_test, a_loop_begun_before_the_destructor_runs_every_element) {
  // The destructor waits for a loop whose caller stands in for a worker, and
  // everything the loop forks after the destruction began is one of the
  // pool's own jobs: it must run, as a worker's forks would. Element 0 runs
  // on the caller (it keeps the left half) and makes its nested loop's forks
  // only once the destructor has begun.
  if (GetParam() < 2) GTEST_SKIP() << "the caller stands in on two workers or more";
  auto owned = std::make_unique<weft::pool>(options());
  weft::pool& pool = *owned;  // unique_ptr::reset() nulls its pointer first
  std::atomic<bool> begun{false};
  std::atomic<bool> destroying{false};
  std::atomic<int> inner{0};
  std::string error;
  constexpr int outer_n = 64;
  constexpr int inner_n = 16;
  std::thread caller([&] {
    try {
      weft::for_each_index(pool, 0, outer_n, [&](int i) {
        if (i == 0) {
          begun = true;
          while (!destroying.load()) std::this_thread::yield();
          spin_for(20ms);  // the destructor has closed the pool by now
        }
        weft::for_each_index(pool, 0, inner_n, [&](int) { inner.fetch_add(1); });
      });
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  ASSERT_TRUE(weft::test::wait_for(begun));
  destroying = true;
  owned.reset();  // waits for the loop
  caller.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(inner.load(), outer_n * inner_n);
}

TEST_P(algorithm_test, an_elements_spawn_is_not_bounded_when_the_caller_runs_the_loop) {
  // The pool's own jobs are never held up by pool_options::capacity, whoever
  // runs them: an element function run by the caller in a worker's place
  // spawns as a worker would. More jobs than workers wait here, so a bound
  // of one would refuse some of them.
  if (GetParam() < 2) GTEST_SKIP() << "the caller stands in on two workers or more";
  weft::pool pool{{.threads = GetParam(), .capacity = 1, .on_full = weft::overflow::reject}};
  const std::size_t jobs = pool.size() + 2;
  std::atomic<bool> release{false};
  std::atomic<std::size_t> ran{0};
  bool on_caller = false;
  const std::thread::id caller = std::this_thread::get_id();
  std::string error;
  try {
    weft::for_each_index(pool, 0, 1, [&](int) {
      on_caller = std::this_thread::get_id() == caller;
      for (std::size_t k = 0; k < jobs; ++k) {
        pool.spawn([&] {
          while (!release.load()) std::this_thread::yield();
          ran.fetch_add(1);
        });
      }
    });
  } catch (const std::exception& e) {
    error = e.what();
  }
  release = true;
  pool.wait();
  EXPECT_TRUE(on_caller) << "the caller did not stand in: nothing was tested";
  EXPECT_EQ(error, "");
  EXPECT_EQ(ran.load(), jobs);
}

TEST_P(algorithm_test, a_worker_keeps_the_half_on_its_side_of_a_static_partition) {
  // Every call of a loop hands each worker the same part of the range, as a
  // static schedule would, whichever worker runs the root piece: the last
  // worker keeps the right half and forks the left one, worker 0 the other
  // way round. The grain allows exactly one split, and with every other
  // worker held the free one runs both halves, the kept one first. Without
  // the rule the root's worker always ran the left half first, and a worker
  // found other elements in its caches from call to call
  // (parallel_loops/balanced_1e7).
  // Called from a job, so that a worker runs the root piece (an outside
  // caller would run it itself, in the free worker's place).
  if (GetParam() < 2) GTEST_SKIP() << "needs two workers";
  weft::pool pool{options()};
  const std::size_t n = 1000;
  for (const std::size_t free_worker : {pool.size() - 1, std::size_t{0}}) {
    const hold_all_but held{pool, {free_worker}};
    std::vector<std::size_t> order;
    std::set<std::size_t> threads;
    pool.submit([&] {
          weft::for_each_index(
              pool, std::size_t{0}, n,
              [&](std::size_t i) {
                order.push_back(i);
                threads.insert(weft::this_worker::index().value_or(99));
              },
              weft::grain{n / 2});
        })
        .get();
    ASSERT_EQ(order.size(), n);
    EXPECT_EQ(threads, std::set<std::size_t>{free_worker});
    const std::size_t first = free_worker == 0 ? 0 : n / 2;
    EXPECT_EQ(order.front(), first) << "worker " << free_worker;
    // Each half in index order.
    EXPECT_TRUE(std::is_sorted(order.begin(), order.begin() + n / 2));
    EXPECT_TRUE(std::is_sorted(order.begin() + n / 2, order.end()));
  }
}

TEST_P(algorithm_test, the_lower_index_wins_when_the_right_half_runs_first) {
  // Two free workers: whichever takes the root piece keeps its own half
  // (worker 0 the left, the last one the right) and the other steals the
  // rest. Index 900 throws only once index 10 has, so both halves throw
  // whatever the timing, and the caller must get 10, also when the right
  // half ran on the forking worker (its exception then waits for the left
  // half's). Called from a job, so that a worker runs the root piece.
  if (GetParam() < 2) GTEST_SKIP() << "needs two workers";
  weft::pool pool{options()};
  const int n = 1000;
  const hold_all_but held{pool, {0, pool.size() - 1}};
  const int rounds = static_cast<int>(weft::test::scaled(20, 4));
  for (int round = 0; round < rounds; ++round) {
    std::atomic<bool> left_threw{false};
    std::string caught;
    try {
      pool.submit([&] {
            weft::for_each_index(
                pool, 0, n,
                [&](int i) {
                  if (i == 10) {
                    left_threw = true;
                    throw std::runtime_error("10");
                  }
                  if (i == 900) {
                    const auto until = std::chrono::steady_clock::now() + 10s;
                    while (!left_threw.load() && std::chrono::steady_clock::now() < until) {
                      std::this_thread::yield();
                    }
                    throw std::runtime_error("900");
                  }
                },
                weft::grain{n / 2});
          })
          .get();
    } catch (const std::runtime_error& e) {
      caught = e.what();
    }
    EXPECT_EQ(caught, "10") << "round " << round;
  }
}

struct index_error : std::runtime_error {
  explicit index_error(std::size_t i) : std::runtime_error("index"), index(i) {}
  std::size_t index;
};

TEST_P(algorithm_test, the_lowest_thrown_index_wins_and_nothing_runs_after_return) {
  weft::pool pool{options()};
  const std::size_t n = weft::test::scaled(20'000, 1000);
  const int rounds = static_cast<int>(weft::test::scaled(40, 5));
  for (int round = 0; round < rounds; ++round) {
    // A few random indices throw.
    std::set<std::size_t> throwing;
    for (int k = 0; k < 1 + round % 4; ++k)
      throwing.insert(weft::test::mix(static_cast<std::uint64_t>(round * 16 + k)) % n);
    std::mutex m;
    std::set<std::size_t> thrown;
    std::atomic<int> in_flight{0};
    std::atomic<std::size_t> ran{0};
    std::optional<std::size_t> caught;
    try {
      weft::for_each_index(
          pool, std::size_t{0}, n,
          [&](std::size_t i) {
            in_flight.fetch_add(1);
            ran.fetch_add(1);
            if (throwing.contains(i)) {
              {
                const std::lock_guard lock{m};
                thrown.insert(i);
              }
              in_flight.fetch_sub(1);
              throw index_error(i);
            }
            in_flight.fetch_sub(1);
          },
          weft::grain{static_cast<std::size_t>(1 + round % 64)});
    } catch (const index_error& e) {
      caught = e.index;
    }
    ASSERT_TRUE(caught.has_value()) << "round " << round << ": no exception arrived";
    EXPECT_EQ(in_flight.load(), 0) << "an element was still running after the call returned";
    const std::size_t ran_at_return = ran.load();
    ASSERT_FALSE(thrown.empty());
    EXPECT_EQ(*caught, *thrown.begin()) << "not the lowest index that threw";
    if (sequential()) {
      // One piece, in index order: everything up to the first throw, no more.
      EXPECT_EQ(*caught, *throwing.begin());
      EXPECT_EQ(ran_at_return, *caught + 1);
    }
    std::this_thread::sleep_for(1ms);
    EXPECT_EQ(ran.load(), ran_at_return) << "an element ran after the call returned";
  }
}

TEST_P(algorithm_test, an_exception_skips_the_pieces_not_started) {
  // The first element to run throws, whichever it is: with several workers
  // the piece holding index 0 may start last (a worker keeps the half on
  // its side of the range, docs/algorithms.md), and a throw there would
  // then find every other piece started.
  weft::pool pool{options()};
  const int n = 2000;
  std::atomic<int> ran{0};
  std::atomic<bool> thrown{false};
  std::atomic<int> first{-1};
  EXPECT_THROW(weft::for_each_index(pool, 0, n,
                                    [&](int i) {
                                      ran.fetch_add(1);
                                      if (!thrown.exchange(true)) {
                                        first = i;
                                        throw std::runtime_error("first");
                                      }
                                      spin_for(5us);
                                    }),
               std::runtime_error);
  if (GetParam() <= 1) {
    // One thread runs everything (the caller only waits), from index 0:
    // the halves still queued when it throws are all skipped.
    EXPECT_EQ(first.load(), 0);
    EXPECT_EQ(ran.load(), 1);
  } else {
    EXPECT_LT(ran.load(), n);
  }
}

TEST_P(algorithm_test, exceptions_from_reduce_op_transform_and_map_arrive) {
  weft::pool pool{options()};
  std::vector<int> v(5000);
  std::iota(v.begin(), v.end(), 0);
  EXPECT_THROW(weft::reduce(pool, v.begin(), v.end(), 0,
                            [](int a, int b) {
                              if (b == 4321) throw std::out_of_range("op");
                              return a + b;
                            }),
               std::out_of_range);
  EXPECT_THROW(weft::transform_reduce(pool, v.begin(), v.end(), 0, std::plus<>{},
                                      [](int x) {
                                        if (x == 17) throw std::length_error("transform");
                                        return x;
                                      }),
               std::length_error);
  EXPECT_THROW((void)weft::map(pool, v,
                               [](int x) {
                                 if (x == 4999) throw std::domain_error("map");
                                 return x;
                               }),
               std::domain_error);
  std::vector<int> out(v.size());
  EXPECT_THROW(weft::transform(pool, v.begin(), v.end(), out.begin(),
                               [](int x) {
                                 if (x == 2500) throw std::invalid_argument("transform");
                                 return x;
                               }),
               std::invalid_argument);
  // The pool is still usable afterwards.
  EXPECT_EQ(weft::reduce(pool, v.begin(), v.end(), 0), 4999 * 5000 / 2);
}

TEST_P(algorithm_test, bad_input_throws_usage_error_and_runs_nothing) {
  weft::pool pool{options()};
  std::vector<int> v(10);
  std::vector<int> out(10);
  int calls = 0;
  auto count = [&](auto&&...) {
    ++calls;
    return 0;
  };
  EXPECT_THROW(weft::for_each(pool, v.end(), v.begin(), count), weft::usage_error);
  EXPECT_THROW(weft::transform(pool, v.end(), v.begin(), out.begin(), count), weft::usage_error);
  EXPECT_THROW((void)weft::reduce(pool, v.end(), v.begin(), 0), weft::usage_error);
  EXPECT_THROW((void)weft::transform_reduce(pool, v.end(), v.begin(), 0, std::plus<>{}, count),
               weft::usage_error);
  EXPECT_THROW(weft::for_each_index(pool, 5, 3, count), weft::usage_error);
  EXPECT_THROW(weft::for_each_index(pool, -1, std::size_t{3}, count), weft::usage_error);
  EXPECT_THROW(weft::for_each(pool, v.begin(), v.end(), count, weft::grain{0}), weft::usage_error);
  EXPECT_THROW((void)weft::map(pool, v, count, weft::grain{0}), weft::usage_error);
  EXPECT_THROW((void)weft::reduce(pool, v.begin(), v.end(), 0, std::plus<>{}, weft::grain{0}),
               weft::usage_error);
  EXPECT_EQ(calls, 0);
  try {
    weft::for_each(pool, v.end(), v.begin(), count);
  } catch (const weft::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("first <= last"), std::string::npos) << e.what();
  }
}

// A loop's root job, when its caller cannot stand in (one worker here),
// must run: the call is synchronous and its caller waits for it.
struct loop_outcome {
  std::string error;  // what the call threw; empty if nothing
  int ran = 0;        // elements run, of 100
};

// Holds the pool's only worker, then calls a loop of 100 elements from
// another thread (its root job waits behind the held worker), runs
// meanwhile() and lets the worker go.
template <class Meanwhile>
loop_outcome a_loop_behind_the_held_worker(weft::pool& pool, Meanwhile meanwhile) {
  std::atomic<bool> held{false};
  std::atomic<bool> release{false};
  pool.spawn([&] {
    held = true;
    while (!release.load()) std::this_thread::yield();
  });
  EXPECT_TRUE(weft::test::wait_for(held));
  meanwhile(0);  // before the call
  std::atomic<int> ran{0};
  loop_outcome out;
  std::thread caller([&] {
    try {
      weft::for_each_index(pool, 0, 100, [&](int) { ran.fetch_add(1); });
    } catch (const std::exception& e) {
      out.error = e.what();
    }
  });
  meanwhile(1);  // during it
  release = true;
  caller.join();
  pool.wait();
  out.ran = ran.load();
  return out;
}

TEST(algorithm_root_job, purge_does_not_drop_it) {
  weft::pool pool{{.threads = 1}};
  const loop_outcome out = a_loop_behind_the_held_worker(pool, [&](int when) {
    if (when == 0) return;
    // The root waits behind the held worker while these purges run.
    const auto until = std::chrono::steady_clock::now() + 50ms;
    while (std::chrono::steady_clock::now() < until) {
      (void)pool.purge();
      std::this_thread::sleep_for(1ms);
    }
  });
  EXPECT_EQ(out.error, "");
  EXPECT_EQ(out.ran, 100);
}

TEST(algorithm_root_job, the_bound_does_not_hold_it_up) {
  weft::pool pool{{.threads = 1, .capacity = 1, .on_full = weft::overflow::reject}};
  const loop_outcome out = a_loop_behind_the_held_worker(pool, [&](int when) {
    if (when == 0) {
      pool.spawn([] {});  // queued: the bound is full
    } else {
      std::this_thread::sleep_for(50ms);  // a refusal comes at once
    }
  });
  EXPECT_EQ(out.error, "");
  EXPECT_EQ(out.ran, 100);
}

INSTANTIATE_TEST_SUITE_P(workers, algorithm_test, ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
