// detail::lane_queue: one producer, consumers taking batches; every job taken once.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <random>
#include <thread>
#include <vector>
#include <weft/detail/lane.hpp>

#include "support/support.hpp"

namespace {

using weft::detail::job;
using weft::detail::lane_queue;

TEST(lane_queue, takes_oldest_first_and_at_most_half) {
  lane_queue q;
  std::vector<job> jobs(10);
  for (auto& j : jobs) q.push(&j);
  std::array<job*, 32> out{};
  const std::size_t n = q.take(out.data(), out.size());
  EXPECT_EQ(n, 5U) << "half of 10, rounded up";
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(out[i], &jobs[i]);
  EXPECT_EQ(q.take(out.data(), 2), 2U);
  EXPECT_EQ(out[0], &jobs[5]);
  EXPECT_EQ(q.take(out.data(), 32), 2U);  // 3 left: half rounded up
  EXPECT_EQ(q.take(out.data(), 32), 1U);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.take(out.data(), 32), 0U);
}

TEST(lane_queue, grows_past_its_initial_capacity_in_order) {
  lane_queue q;
  std::vector<job> jobs(5000);
  for (auto& j : jobs) q.push(&j);
  std::vector<job*> taken;
  std::array<job*, 1> one{};
  while (q.take(one.data(), 1) == 1) taken.push_back(one[0]);
  ASSERT_EQ(taken.size(), jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) ASSERT_EQ(taken[i], &jobs[i]);
}

class lane_queue_consumers : public ::testing::TestWithParam<int> {};

TEST_P(lane_queue_consumers, every_job_is_taken_exactly_once_while_growing) {
  const std::size_t n = weft::test::scaled(300000, 20000);
  std::vector<job> jobs(n);
  std::vector<std::atomic<int>> seen(n);
  lane_queue q;
  std::atomic<bool> produced{false};
  std::vector<std::thread> consumers;
  for (int c = 0; c < GetParam(); ++c) {
    consumers.emplace_back([&, c] {
      std::mt19937 rng{static_cast<unsigned>(c)};
      std::array<job*, 32> out{};
      for (;;) {
        const bool done = produced.load(std::memory_order_acquire);
        const std::size_t got = q.take(out.data(), 1 + rng() % out.size());
        for (std::size_t i = 0; i < got; ++i) {
          seen[static_cast<std::size_t>(out[i] - jobs.data())].fetch_add(1);
        }
        if (got == 0 && done) return;
      }
    });
  }
  std::mt19937 rng{99};
  for (std::size_t i = 0; i < n; ++i) {
    q.push(&jobs[i]);
    if (rng() % 1024 == 0) std::this_thread::yield();  // let the consumers catch up now and then
  }
  produced.store(true, std::memory_order_release);
  for (auto& c : consumers) c.join();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(seen[i].load(), 1) << "job " << i;
}

INSTANTIATE_TEST_SUITE_P(consumers, lane_queue_consumers, ::testing::Values(1, 2, 4));

}  // namespace
