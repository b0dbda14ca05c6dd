// weft::join: results, exceptions, no allocation on a worker, deep recursion.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <variant>
#include <vector>
#include <weft/weft.hpp>

#include "support/support.hpp"

// Counts the calling thread's heap allocations, so a test can check that a
// code path allocates nothing. Replacing the global operator new affects this
// whole test executable; it only counts and forwards to malloc.
namespace {
thread_local std::size_t allocations = 0;
}

// GCC pairs the free() below with the new-expressions it inlines this into and
// warns; here new and delete are replaced together, so they do match.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
  ++allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc{};
}
// The nothrow form too (std::stable_sort's buffer): a sanitizer's runtime
// defines its own, which the free() above would not match.
void* operator new(std::size_t size, const std::nothrow_t& /*tag*/) noexcept {
  ++allocations;
  return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t /*size*/) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t& /*tag*/) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

class join_test : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

int fib(int n) {
  if (n < 2) return n;
  auto [a, b] = weft::join([&] { return fib(n - 1); }, [&] { return fib(n - 2); });
  return a + b;
}

constexpr int fib_value(int n) { return n < 2 ? n : fib_value(n - 1) + fib_value(n - 2); }

TEST_P(join_test, returns_both_results) {
  weft::pool pool{options()};
  auto result = pool.submit([] {
    auto [a, b] = weft::join([] { return 1; }, [] { return std::string("two"); });
    return std::to_string(a) + b;
  });
  EXPECT_EQ(result.get(), "1two");
}

TEST_P(join_test, void_results_become_monostate) {
  weft::pool pool{options()};
  int x = 0;
  int y = 0;
  pool.submit([&] {
        auto [a, b] = weft::join([&] { x = 1; }, [&] { y = 2; });
        static_assert(std::is_same_v<decltype(a), std::monostate>);
        static_assert(std::is_same_v<decltype(b), std::monostate>);
      })
      .get();
  EXPECT_EQ(x + y, 3);
}

TEST_P(join_test, fibonacci_is_right) {
  weft::pool pool{options()};
  const int n = weft::test::stress_scale() < 1 ? 20 : 27;
  EXPECT_EQ(pool.submit([n] { return fib(n); }).get(), fib_value(n));
}

TEST_P(join_test, exception_is_rethrown_after_both_sides_finished) {
  weft::pool pool{options()};
  for (int round = 0; round < 50; ++round) {
    std::atomic<bool> other_finished{false};
    auto f = pool.submit([&] {
      try {
        weft::join([] { throw std::runtime_error("left"); },
                   [&] {
                     std::this_thread::sleep_for(std::chrono::microseconds{round * 10});
                     other_finished = true;
                   });
      } catch (const std::runtime_error& e) {
        return std::string(e.what()) + (other_finished.load() ? "+done" : "+running");
      }
      return std::string("no exception");
    });
    ASSERT_EQ(f.get(), "left+done");
  }
}

TEST_P(join_test, right_side_exception_is_rethrown_too) {
  weft::pool pool{options()};
  auto f = pool.submit(
      [] { weft::join([] { return 1; }, []() -> int { throw std::out_of_range("right"); }); });
  EXPECT_THROW(f.get(), std::out_of_range);
}

TEST_P(join_test, allocates_nothing_on_a_worker) {
  weft::pool pool{options()};
  auto count = pool.submit([] {
    const std::size_t before = allocations;
    int sum = 0;
    for (int i = 0; i < 100; ++i) {
      auto [a, b] = weft::join([i] { return i; }, [i] { return 2 * i; });
      sum += a + b;
    }
    return std::pair{allocations - before, sum};
  });
  auto [allocated, sum] = count.get();
  EXPECT_EQ(sum, 3 * 4950);
  EXPECT_EQ(allocated, 0U);
}

TEST_P(join_test, deep_recursion_does_not_overflow) {
  // fib(35)-style recursion, and a chain of nested joins deeper than the
  // help-depth limit.
  weft::pool pool{options()};
  const int n = weft::test::stress_scale() < 1 ? 24 : 32;
  EXPECT_EQ(pool.submit([n] { return fib(n); }).get(), fib_value(n));
  std::function<int(int)> chain = [&](int level) -> int {
    if (level == 0) return 0;
    auto [a, b] = weft::join([&] { return chain(level - 1); }, [] { return 1; });
    return a + b;
  };
  EXPECT_EQ(pool.submit([&] { return chain(5000); }).get(), 5000);
}

using weft::test::wait_for;

// A join whose first half waits for the second to start: the second must be
// stolen. At the top of a job the deque's public part is empty, so join
// publishes its half at once (docs/deque.md, "The private part").
TEST_P(join_test, second_half_is_stolen_while_the_first_waits_for_it) {
  if (GetParam() < 2) GTEST_SKIP() << "needs two workers";
  weft::pool pool{options()};
  const int rounds = static_cast<int>(weft::test::scaled(200, 20));
  auto met = pool.submit([rounds] {
    int n = 0;
    for (int round = 0; round < rounds; ++round) {
      std::atomic<bool> started{false};
      auto [ok, where] = weft::join([&] { return wait_for(started); },
                                    [&] {
                                      started = true;
                                      return weft::this_worker::index();
                                    });
      if (ok && where != weft::this_worker::index()) ++n;
    }
    return n;
  });
  EXPECT_EQ(met.get(), rounds);
}

// A joiner whose stolen half runs long naps, and the thief wakes it as the
// half ends: it does not sleep out its backoff's pauses (docs/waiting.md, "A
// worker's wait that finds nothing to run"). The pauses are scaled to
// seconds here, so a joiner that slept them out would return about a second
// late.
TEST_P(join_test, joiner_of_a_long_stolen_half_wakes_when_it_ends) {
  if (GetParam() < 2) GTEST_SKIP() << "needs two workers";
  weft::pool pool{options()};
  const weft::test::backoff_sleep_scaled scaled{10'000};  // 50 us -> 0.5 s
  using clock = std::chrono::steady_clock;
  const auto late = pool.submit([] {
                          std::atomic<bool> started{false};
                          clock::time_point ended;
                          auto [ok, thief] = weft::join(
                              [&] { return wait_for(started); },
                              [&] {
                                started = true;
                                std::this_thread::sleep_for(std::chrono::milliseconds{600});
                                ended = clock::now();
                                return weft::this_worker::index();
                              });
                          EXPECT_TRUE(ok) << "the second half was never stolen";
                          EXPECT_NE(thief, weft::this_worker::index());
                          return clock::now() - ended;
                        })
                        .get();
  EXPECT_LT(late, std::chrono::milliseconds{300});
}

// Both threads of a join whose second half was stolen took part in a
// fork-join: each may then search past half the pool when it next runs out
// of work, so that the next fork finds it awake (detail::search_limit(),
// docs/sleep.md).
TEST_P(join_test, both_threads_of_a_stolen_half_may_search_past_half_the_pool) {
  if (GetParam() < 2) GTEST_SKIP() << "needs two workers";
  const std::size_t workers = GetParam();
  EXPECT_EQ(weft::detail::search_limit(workers, true), workers);
  EXPECT_EQ(weft::detail::search_limit(workers, false), std::max<std::size_t>(1, workers / 2));
  EXPECT_EQ(weft::detail::search_limit(1, false), 1U);
  weft::pool pool{options()};
  struct marks {
    bool before = true;   // the joiner's, when its job started
    bool thief = false;   // the thief's, inside the stolen half
    bool joiner = false;  // the joiner's, after the stolen join
    bool met = false;
  };
  const marks m = pool.submit([] {
                        auto marked = [] { return weft::detail::tls.self->forked_with_others; };
                        marks r;
                        r.before = marked();
                        std::atomic<bool> started{false};
                        auto [ok, thief] = weft::join([&] { return wait_for(started); },
                                                      [&] {
                                                        started = true;
                                                        return marked();
                                                      });
                        r.met = ok;
                        r.thief = thief;
                        r.joiner = marked();
                        return r;
                      })
                      .get();
  ASSERT_TRUE(m.met);
  EXPECT_FALSE(m.before);
  EXPECT_TRUE(m.thief);
  EXPECT_TRUE(m.joiner);
}

// Results that own memory and cannot be copied, from halves that are stolen
// (the stolen half's result lives in raw storage until the joiner takes it)
// and from halves run inline; ASan checks that none leaks.
TEST_P(join_test, stolen_and_inline_halves_hand_over_move_only_results) {
  weft::pool pool{options()};
  auto total = pool.submit([steal = GetParam() >= 2] {
    std::size_t sum = 0;
    for (int round = 0; round < 100; ++round) {
      std::atomic<bool> started{false};
      auto [a, b] = weft::join(
          [&] {
            if (steal && round % 2 == 0) (void)wait_for(started);
            return std::make_unique<std::string>(std::to_string(round));
          },
          [&] {
            started = true;
            return std::make_unique<std::vector<int>>(static_cast<std::size_t>(round), 1);
          });
      sum += a->size() + b->size();
    }
    return sum;
  });
  // 10 one-digit and 90 two-digit numbers, plus 0 + 1 + ... + 99 ones.
  EXPECT_EQ(total.get(), 10U + 180U + 4950U);
}

// Both halves throw, with the right one stolen or not: the left exception
// wins, the right one is dropped (and freed), and nothing is reported to the
// pool's error path.
TEST_P(join_test, left_exception_wins_when_both_throw) {
  weft::test::error_count errors;
  weft::pool pool{errors.options(GetParam())};
  auto caught = pool.submit([steal = GetParam() >= 2] {
    int left = 0;
    for (int round = 0; round < 50; ++round) {
      std::atomic<bool> started{false};
      try {
        weft::join(
            [&] {
              if (steal && round % 2 == 0) (void)wait_for(started);
              throw std::runtime_error("left " + std::to_string(round));
            },
            [&] {
              started = true;
              throw std::logic_error("right");
            });
      } catch (const std::runtime_error& e) {
        if (std::string(e.what()) == "left " + std::to_string(round)) ++left;
      }
    }
    return left;
  });
  EXPECT_EQ(caught.get(), 50);
  pool.wait();
  EXPECT_EQ(errors.n.load(), 0);
}

// The stolen right half's exception reaches the joiner, with a result type
// that has a destructor.
TEST_P(join_test, stolen_right_half_exception_is_rethrown) {
  if (GetParam() < 2) GTEST_SKIP() << "needs two workers";
  weft::pool pool{options()};
  auto f = pool.submit([] {
    std::atomic<bool> started{false};
    weft::join([&] { return wait_for(started); },
               [&]() -> std::string {
                 started = true;
                 throw std::out_of_range("stolen right");
               });
  });
  EXPECT_THROW(f.get(), std::out_of_range);
}

TEST(join, outside_any_pool_uses_the_default_pool) {
  EXPECT_FALSE(weft::this_worker::index().has_value());
  auto [a, b] = weft::join([] { return 20; }, [] { return weft::this_worker::index(); });
  EXPECT_EQ(a, 20);
  if (weft::default_pool().size() > 0) {
    EXPECT_TRUE(b.has_value()) << "the right side runs on a worker of the default pool";
  }
  EXPECT_EQ(fib(15), fib_value(15));
}

TEST(join, sequential_pool_runs_left_then_right_on_the_caller) {
  weft::pool pool{{.threads = 0}};
  std::string order;
  pool.submit([&] { weft::join([&] { order += "L"; }, [&] { order += "R"; }); }).get();
  EXPECT_EQ(order, "LR");
}

// join_each: every index once, on a worker, for sizes around the halving.
TEST_P(join_test, join_each_calls_every_index_once) {
  weft::pool pool{options()};
  for (const std::size_t n : {0U, 1U, 2U, 3U, 7U, 10U, 100U}) {
    auto counts = pool.submit([n] {
                        std::vector<std::atomic<int>> calls(n);
                        weft::join_each(n, [&calls](std::size_t i) { calls[i].fetch_add(1); });
                        std::vector<int> seen;
                        for (auto& c : calls) seen.push_back(c.load());
                        return seen;
                      })
                      .get();
    EXPECT_EQ(counts, std::vector<int>(n, 1)) << "n = " << n;
  }
}

// A skynet node with join_each: the whole tree, nothing allocated.
std::int64_t each_node(std::int64_t num, int levels) {
  if (levels == 0) return num;
  std::array<std::int64_t, 10> sums{};
  weft::join_each(sums.size(), [&sums, num, levels](std::size_t i) {
    sums[i] = each_node(num * 10 + static_cast<std::int64_t>(i), levels - 1);
  });
  std::int64_t sum = 0;
  for (const std::int64_t s : sums) sum += s;
  return sum;
}

TEST_P(join_test, join_each_sums_a_tree_and_allocates_nothing_on_a_worker) {
  weft::pool pool{options()};
  auto [allocated, sum] = pool.submit([] {
                                const std::size_t before = allocations;
                                const std::int64_t s = each_node(0, 4);
                                return std::pair{allocations - before, s};
                              })
                              .get();
  EXPECT_EQ(sum, std::int64_t{9'999} * 10'000 / 2);
  EXPECT_EQ(allocated, 0U);
}

TEST_P(join_test, join_each_rethrows_the_lowest_failing_index_after_every_call) {
  weft::pool pool{options()};
  auto f = pool.submit([] {
    constexpr std::size_t n = 20;
    std::vector<std::atomic<bool>> ran(n);
    try {
      weft::join_each(n, [&ran](std::size_t i) {
        ran[i].store(true);
        if (i % 7 == 3) throw std::out_of_range(std::to_string(i));
      });
    } catch (const std::out_of_range& e) {
      for (auto& r : ran) EXPECT_TRUE(r.load()) << "join_each returned before every call ran";
      return std::string{e.what()};
    }
    return std::string{"nothing thrown"};
  });
  EXPECT_EQ(f.get(), "3");
}

TEST(join, join_each_outside_a_pool_and_on_a_sequential_one) {
  std::atomic<int> sum{0};
  weft::join_each(10, [&sum](std::size_t i) { sum.fetch_add(static_cast<int>(i)); });
  EXPECT_EQ(sum.load(), 45);
  weft::pool pool{{.threads = 0}};
  std::string order;
  pool.submit([&] { weft::join_each(4, [&](std::size_t i) { order += std::to_string(i); }); })
      .get();
  EXPECT_EQ(order, "0123");
}

INSTANTIATE_TEST_SUITE_P(workers, join_test, ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
