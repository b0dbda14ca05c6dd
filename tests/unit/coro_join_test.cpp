// weft::coro's join under stealing (docs/coroutines.md, "Join: what is
// stolen"): a finishing child takes its next sibling back from the deque
// and hands on to it; stolen, suspended and spawning children take the
// counted path. Every mixture must resume the parent once, after all.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <tuple>

#include "weft/weft.hpp"

namespace {

using namespace std::chrono_literals;

// The number of calls in fib(n)'s tree, 2 fib(n + 1) - 1, counted by a
// join per call.
weft::coro<std::uint64_t> calls(int n) {
  if (n < 2) co_return 1;
  auto [left, right] = co_await weft::join(calls(n - 1), calls(n - 2));
  co_return 1 + left + right;
}

// A tree of joins of three whose children, by their index, finish at once,
// sleep on a timer, or spawn a job that is left on the deque above the next
// sibling.
weft::coro<std::uint64_t> mixed(weft::pool& p, int depth, int kind, std::atomic<int>& spawned) {
  if (kind == 1) co_await weft::sleep_for(std::chrono::microseconds(50));
  if (kind == 2) p.spawn([&spawned] { spawned.fetch_add(1, std::memory_order_relaxed); });
  if (depth == 0) co_return 1;
  auto [a, b, c] =
      co_await weft::join(mixed(p, depth - 1, 0, spawned), mixed(p, depth - 1, 1, spawned),
                          mixed(p, depth - 1, 2, spawned));
  co_return a + b + c;
}

class coro_join_at : public ::testing::TestWithParam<std::size_t> {};

TEST_P(coro_join_at, a_tree_of_joins_is_right_whatever_is_stolen) {
  weft::pool p{{.threads = GetParam()}};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(weft::sync_wait(p, calls(21)), 35421U);
}

TEST_P(coro_join_at, stolen_suspended_and_spawning_children_resume_the_parent_once) {
  weft::pool p{{.threads = GetParam()}};
  std::atomic<int> spawned{0};
  constexpr int depth = 5;  // 3^5 leaves
  EXPECT_EQ(weft::sync_wait(p, mixed(p, depth, 0, spawned)), 243U);
  p.wait();
  // One spawn per node of kind 2: (3^5 - 1) / 2 nodes below the root, a third of them.
  EXPECT_EQ(spawned.load(), 121);
}

TEST_P(coro_join_at, many_roots_at_once) {
  weft::pool p{{.threads = GetParam()}};
  std::vector<weft::future<std::uint64_t>> roots;
  for (int i = 0; i < 16; ++i) roots.push_back(weft::submit(p, calls(14)));
  for (auto& f : roots) EXPECT_EQ(f.get(), 1219U);
}

INSTANTIATE_TEST_SUITE_P(workers, coro_join_at, ::testing::Values(0, 1, 2, 4));

}  // namespace
