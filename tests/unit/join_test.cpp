// weft::join: results, exceptions, no allocation on a worker, deep recursion.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <variant>
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

INSTANTIATE_TEST_SUITE_P(workers, join_test, ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
