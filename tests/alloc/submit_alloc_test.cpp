// pool::submit allocates nothing once warm: a future's state comes from the
// job cache of the submitting thread (docs/design.md, "Where jobs live").
// Every allocation of every thread is counted, through the operator new that
// alloc_failure_test.cpp replaces for this executable. Not under the
// sanitizers, which bring their own allocator.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <utility>
#include <weft/weft.hpp>

#include "alloc/counting.hpp"
#include "support/support.hpp"

namespace {

constexpr int warm_up_trips = 256;
constexpr int round_trips = 2'048;

#ifdef WEFT_TEST_REPLACES_NEW
using weft::test::allocations_during;

// n submit-and-get round trips; returns the sum of the results.
long trips(weft::pool& pool, int n) {
  long sum = 0;
  for (int i = 0; i < n; ++i) sum += pool.submit([i] { return i % 3; }).get();
  return sum;
}

// The sum trips(n) returns.
constexpr long trips_sum(int n) {
  long sum = 0;
  for (int i = 0; i < n; ++i) sum += i % 3;
  return sum;
}
#endif

class submit_alloc : public ::testing::TestWithParam<std::size_t> {};

TEST_P(submit_alloc, round_trips_from_outside_allocate_nothing_once_warm) {
#ifndef WEFT_TEST_REPLACES_NEW
  GTEST_SKIP() << "the sanitizers bring their own allocator";
#else
  weft::pool pool{{.threads = GetParam()}};
  trips(pool, warm_up_trips);
  long sum = 0;
  const long allocated = allocations_during([&] { sum = trips(pool, round_trips); });
  EXPECT_EQ(allocated, 0) << "allocations in " << round_trips << " warm submit().get() trips";
  EXPECT_EQ(sum, trips_sum(round_trips));
#endif
}

TEST_P(submit_alloc, round_trips_inside_a_job_allocate_nothing_once_warm) {
#ifndef WEFT_TEST_REPLACES_NEW
  GTEST_SKIP() << "the sanitizers bring their own allocator";
#else
  weft::pool pool{{.threads = GetParam()}};
  auto job = [&pool] {
    trips(pool, warm_up_trips);
    long s = 0;
    const long a = allocations_during([&] { s = trips(pool, round_trips); });
    return std::pair{a, s};
  };
  auto [allocated, sum] = pool.submit(job).get();
  EXPECT_EQ(allocated, 0) << "allocations in " << round_trips
                          << " warm submit().get() trips inside a job";
  EXPECT_EQ(sum, trips_sum(round_trips));
#endif
}

// A future dropped once its job has run gives its state back as get() does.
TEST_P(submit_alloc, futures_dropped_after_their_job_allocate_nothing_once_warm) {
#ifndef WEFT_TEST_REPLACES_NEW
  GTEST_SKIP() << "the sanitizers bring their own allocator";
#else
  weft::pool pool{{.threads = GetParam()}};
  std::atomic<long> ran{0};
  auto drops = [&](int n) {
    for (int i = 0; i < n; ++i) {
      weft::future<void> f = pool.submit([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
      f.wait();
    }
  };
  drops(warm_up_trips);
  const long allocated = allocations_during([&] { drops(round_trips); });
  EXPECT_EQ(allocated, 0) << "allocations in " << round_trips << " warm submits, dropped after";
  EXPECT_EQ(ran.load(), warm_up_trips + round_trips);
#endif
}

// Not sequential pools (threads = 0): their queue is a std::deque, which
// allocates a block every 64 jobs whatever the jobs are.
INSTANTIATE_TEST_SUITE_P(workers, submit_alloc, ::testing::Values(1, 2, 4),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
