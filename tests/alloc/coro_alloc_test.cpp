// A warm weft::coro fib makes almost no heap allocation: frames come from
// the per-thread frame cache (docs/coroutines.md, "Frames"); what remains is
// the start's future state. Counted as in submit_alloc_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <weft/weft.hpp>

#include "support/allocation_hook.hpp"

namespace {

#ifdef WEFT_TEST_REPLACES_NEW
std::atomic<long> coro_allocations{0};
void count_coro_allocation() { coro_allocations.fetch_add(1, std::memory_order_relaxed); }

weft::coro<std::uint64_t> fib(int n) {
  if (n < 2) co_return static_cast<std::uint64_t>(n);
  auto [a, b] = co_await weft::join(fib(n - 1), fib(n - 2));
  co_return a + b;
}
#endif

class coro_alloc : public ::testing::TestWithParam<std::size_t> {};

TEST_P(coro_alloc, warm_fib_20_makes_at_most_a_few_dozen_allocations) {
#ifndef WEFT_TEST_REPLACES_NEW
  GTEST_SKIP() << "the sanitizers bring their own allocator";
#else
  weft::pool pool{{.threads = GetParam()}};
  for (int i = 0; i < 4; ++i) ASSERT_EQ(weft::sync_wait(pool, fib(20)), 6765U);
  coro_allocations.store(0);
  weft::test::allocation_hook.store(&count_coro_allocation, std::memory_order_relaxed);
  const std::uint64_t r = weft::sync_wait(pool, fib(20));
  weft::test::allocation_hook.store(nullptr, std::memory_order_relaxed);
  EXPECT_EQ(r, 6765U);
  // fib(20) makes 21891 frames: all but a few come from the cache.
  EXPECT_LE(coro_allocations.load(), 36) << "heap allocations in a warm fib(20)";
#endif
}

INSTANTIATE_TEST_SUITE_P(threads, coro_alloc, ::testing::Values(0, 1, 2));

}  // namespace
