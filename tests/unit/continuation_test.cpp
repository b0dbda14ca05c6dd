// future::then, weft::when_all, weft::when_any, pool::spawn_all and
// pool::submit_all, over 0, 1, 2, 4 and 8 workers.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <future>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <ranges>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;

class continuation_test : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
};

// A chain of n continuations, each adding 1; the one at `throw_at` (if any)
// throws instead. `runs` counts the continuations that ran.
weft::future<int> add_chain(weft::pool& pool, int n, int throw_at, std::atomic<int>& runs) {
  weft::future<int> f = pool.submit([] { return 0; });
  for (int i = 0; i < n; ++i) {
    f = std::move(f).then([i, throw_at, &runs](int x) {
      runs.fetch_add(1, std::memory_order_relaxed);
      if (i == throw_at) throw std::runtime_error("link " + std::to_string(i));
      return x + 1;
    });
  }
  return f;
}

TEST_P(continuation_test, then_chain_passes_values) {
  weft::pool pool{options()};
  const int n = static_cast<int>(weft::test::scaled(10'000, 100));
  std::atomic<int> runs{0};
  EXPECT_EQ(add_chain(pool, n, -1, runs).get(), n);
  EXPECT_EQ(runs.load(), n);
}

TEST_P(continuation_test, then_chain_skips_after_an_exception) {
  weft::pool pool{options()};
  const int n = static_cast<int>(weft::test::scaled(10'000, 100));
  const int middle = n / 2;
  std::atomic<int> runs{0};
  weft::future<int> f = add_chain(pool, n, middle, runs);
  try {
    f.get();
    FAIL() << "the chain's exception was lost";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string{e.what()}, "link " + std::to_string(middle));
  }
  EXPECT_EQ(runs.load(), middle + 1);  // the links after the throw were skipped
  pool.wait();                         // and nothing reached the pool's error path
}

TEST_P(continuation_test, then_on_a_ready_future_runs_as_a_job) {
  weft::pool pool{options()};
  weft::future<int> f = pool.submit([] { return 41; });
  f.wait();
  ASSERT_TRUE(f.ready());
  std::atomic<bool> ran{false};
  weft::future<int> g = std::move(f).then([&](int x) {
    // A job of this pool: a worker, or the thread that runs a sequential
    // pool's jobs.
    EXPECT_TRUE(weft::this_worker::index().has_value());
    ran.store(true);
    return x + 1;
  });
  EXPECT_FALSE(f.valid());
  if (GetParam() == 0) {
    EXPECT_FALSE(ran.load());  // queued, not run by then()
  }
  EXPECT_EQ(g.get(), 42);
  EXPECT_TRUE(ran.load());
}

TEST_P(continuation_test, then_with_void_futures) {
  weft::pool pool{options()};
  std::atomic<int> step{0};
  weft::future<void> a = pool.submit([&] { step.store(1); });
  weft::future<int> b = std::move(a).then([&] { return step.load() + 1; });
  weft::future<void> c = std::move(b).then([&](int x) { step.store(x + 1); });
  weft::future<std::string> d = std::move(c).then([&] { return std::to_string(step.load()); });
  EXPECT_EQ(d.get(), "3");

  weft::future<void> failing = pool.submit([] { throw std::logic_error("void"); });
  std::atomic<bool> skipped{true};
  weft::future<void> after = std::move(failing).then([&] { skipped.store(false); });
  EXPECT_THROW(after.get(), std::logic_error);
  EXPECT_TRUE(skipped.load());
}

TEST_P(continuation_test, then_passes_move_only_values) {
  weft::pool pool{options()};
  auto f = pool.submit([] { return std::make_unique<int>(7); });
  auto g = std::move(f).then([](std::unique_ptr<int> p) { return *p * 6; });
  EXPECT_EQ(g.get(), 42);
}

TEST_P(continuation_test, continuation_exception_reaches_a_dropped_futures_pool) {
  std::atomic<int> errors{0};
  weft::pool_options o = options();
  o.on_error = [&](const std::exception_ptr&) { errors.fetch_add(1); };
  {
    weft::pool pool{o};
    std::atomic<bool> ran{false};
    {
      auto f = pool.submit([] { return 1; });
      auto dropped = std::move(f).then([&](int) {
        ran.store(true);
        throw std::runtime_error("nobody holds my future");
      });
    }
    pool.wait();  // waits for the continuation although its future is gone
    EXPECT_TRUE(ran.load());
  }
  EXPECT_EQ(errors.load(), 1);
}

TEST_P(continuation_test, pool_destructor_waits_for_pending_continuations) {
  const int n = 100;
  std::atomic<int> runs{0};
  {
    weft::pool pool{options()};
    auto first = pool.submit([] {
      std::this_thread::sleep_for(5ms);
      return 0;
    });
    for (int i = 0; i < n; ++i) {
      first = std::move(first).then([&runs](int x) {
        runs.fetch_add(1);
        return x + 1;
      });
    }
    // `first` goes before the pool: the continuations are pending, and only
    // the pool's counts keep them.
  }
  EXPECT_EQ(runs.load(), n);
}

TEST_P(continuation_test, wait_waits_for_a_continuation_whose_future_was_dropped) {
  weft::pool pool{options()};
  std::atomic<bool> ran{false};
  (void)pool
      .submit([] {
        std::this_thread::sleep_for(2ms);
        return 1;
      })
      .then([&](int) { ran.store(true); });
  pool.wait();
  EXPECT_TRUE(ran.load());
}

TEST_P(continuation_test, when_all_gathers_in_order) {
  weft::pool pool{options()};
  const std::size_t n = weft::test::scaled(100'000, 1000);
  std::vector<weft::future<std::size_t>> futures;
  futures.reserve(n);
  for (std::size_t i = 0; i < n; ++i) futures.push_back(pool.submit([i] { return i * 3; }));
  std::vector<std::size_t> values = weft::when_all(std::move(futures)).get();
  ASSERT_EQ(values.size(), n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(values[i], i * 3) << i;
}

// when_all waits on one future at a time, in index order: futures that
// finish forwards, backwards (the first waited on finishes last, and its
// notification passes all the others) or shuffled all come back in order.
// One worker, held until when_all has subscribed, runs them in the order
// they were submitted.
TEST_P(continuation_test, when_all_gathers_in_order_whatever_order_they_finish_in) {
  const std::size_t n = weft::test::scaled(2'000, 200);
  std::vector<std::size_t> forwards(n);
  std::iota(forwards.begin(), forwards.end(), std::size_t{0});
  std::vector<std::size_t> backwards(forwards.rbegin(), forwards.rend());
  std::vector<std::size_t> shuffled = forwards;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937{42});
  for (const std::vector<std::size_t>* order : {&forwards, &backwards, &shuffled}) {
    weft::pool pool{{.threads = std::min<std::size_t>(GetParam(), 1)}};
    std::atomic<bool> open{false};
    pool.spawn([&open] {
      while (!open.load()) std::this_thread::yield();
    });
    std::vector<weft::future<std::size_t>> futures(n);
    for (const std::size_t i : *order) futures[i] = pool.submit([i] { return i * 7; });
    weft::future<std::vector<std::size_t>> all = weft::when_all(std::move(futures));
    open.store(true);
    const std::vector<std::size_t> values = all.get();
    ASSERT_EQ(values.size(), n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(values[i], i * 7) << i;
  }
}

// when_all takes each result as its walk passes it, while later futures
// still run: with the last job held back, the values of all the others are
// moved out of their futures (a move each at least) before it finishes, not
// all at the end.
struct counted_moves {
  static std::atomic<int> moves;
  int v = 0;
  explicit counted_moves(int x) noexcept : v(x) {}
  counted_moves(counted_moves&& o) noexcept : v(o.v) { moves.fetch_add(1); }
  counted_moves(const counted_moves&) = delete;
  counted_moves& operator=(const counted_moves&) = delete;
  counted_moves& operator=(counted_moves&&) = delete;
  ~counted_moves() = default;
};
std::atomic<int> counted_moves::moves{0};

TEST_P(continuation_test, when_all_takes_each_result_before_the_last_finishes) {
  if (GetParam() == 0) GTEST_SKIP() << "a job held back needs a worker";
  weft::pool pool{options()};
  const int n = 100;
  std::atomic<int> finished{0};
  std::atomic<bool> open{false};
  std::vector<weft::future<counted_moves>> futures;
  for (int i = 0; i < n - 1; ++i) {
    futures.push_back(pool.submit([i, &finished] {
      finished.fetch_add(1);
      return counted_moves{i};
    }));
  }
  futures.push_back(pool.submit([&open] {
    while (!open.load()) std::this_thread::yield();
    return counted_moves{n - 1};
  }));
  while (finished.load() != n - 1) std::this_thread::yield();
  const int before = counted_moves::moves.load();
  weft::future<std::vector<counted_moves>> all = weft::when_all(std::move(futures));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (counted_moves::moves.load() - before < n - 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_GE(counted_moves::moves.load() - before, n - 1)
      << "the results were not taken while the last job was still running";
  open.store(true);
  const std::vector<counted_moves> values = all.get();
  ASSERT_EQ(values.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_EQ(values[static_cast<std::size_t>(i)].v, i);
}

TEST_P(continuation_test, when_all_of_void_futures) {
  weft::pool pool{options()};
  const std::size_t n = weft::test::scaled(10'000, 100);
  std::atomic<std::size_t> done{0};
  std::vector<weft::future<void>> futures;
  for (std::size_t i = 0; i < n; ++i) futures.push_back(pool.submit([&] { done.fetch_add(1); }));
  weft::future<void> all = weft::when_all(std::move(futures));
  all.get();
  EXPECT_EQ(done.load(), n);
}

TEST_P(continuation_test, when_all_rethrows_the_lowest_index_after_all_finished) {
  weft::pool pool{options()};
  const std::size_t n = 64;
  std::atomic<std::size_t> finished{0};
  std::vector<weft::future<int>> futures;
  for (std::size_t i = 0; i < n; ++i) {
    futures.push_back(pool.submit([i, &finished]() -> int {
      // Index 10 throws last, index 50 first (with workers), index 63 finishes last.
      if (i == 10) std::this_thread::sleep_for(5ms);
      if (i == n - 1) std::this_thread::sleep_for(10ms);
      finished.fetch_add(1);
      if (i == 10 || i == 50) throw std::runtime_error(std::to_string(i));
      return static_cast<int>(i);
    }));
  }
  try {
    weft::when_all(std::move(futures)).get();
    FAIL() << "when_all lost the exceptions";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string{e.what()}, "10");
  }
  EXPECT_EQ(finished.load(), n);
}

TEST_P(continuation_test, when_any_gives_the_first_ready) {
  weft::pool pool{options()};
  std::atomic<bool> release{false};
  const bool gate = GetParam() != 0;  // a sequential pool runs in order anyway
  std::vector<weft::future<int>> futures(4);
  futures[2] = pool.submit([] { return 2; });  // the first to run
  for (std::size_t i : {0U, 1U, 3U}) {
    futures[i] = pool.submit([&pool, &release, gate, i] {
      // A waiting worker runs other jobs: the fast one is never held up.
      if (gate) pool.wait_until([&] { return release.load(); });
      return static_cast<int>(i);
    });
  }
  const std::size_t first = weft::when_any(futures).get();
  release.store(true);
  EXPECT_EQ(first, 2U);
  for (std::size_t i = 0; i < futures.size(); ++i) EXPECT_EQ(futures[i].get(), static_cast<int>(i));
}

TEST_P(continuation_test, when_any_prefers_the_lowest_ready_index) {
  weft::pool pool{options()};
  std::vector<weft::future<void>> futures;
  for (int i = 0; i < 8; ++i) futures.push_back(pool.submit([] {}));
  for (auto& f : futures) f.wait();
  EXPECT_EQ(weft::when_any(futures).get(), 0U);
  weft::future<void> failing = pool.submit([] { throw std::runtime_error("x"); });
  failing.wait();
  std::vector<weft::future<void>> one;
  one.push_back(std::move(failing));
  EXPECT_EQ(weft::when_any(one).get(), 0U);  // a failed future is ready too
  EXPECT_THROW(one[0].get(), std::runtime_error);
}

TEST_P(continuation_test, misuse_throws_usage_error) {
  weft::pool pool{options()};
  weft::future<int> empty;
  EXPECT_THROW((void)std::move(empty).then([](int x) { return x; }), weft::usage_error);
  std::vector<weft::future<int>> holey;
  holey.push_back(pool.submit([] { return 1; }));
  holey.emplace_back();
  EXPECT_THROW((void)weft::when_any(holey), weft::usage_error);
  try {
    (void)weft::when_all(std::move(holey));
    FAIL();
  } catch (const weft::usage_error& e) {
    EXPECT_NE(std::string{e.what()}.find("index 1"), std::string::npos) << e.what();
  }
}

// A future may outlive its pool (docs/continuations.md, "A future whose pool
// is gone"): chaining it then never touches the dead pool. then runs f here,
// on the calling thread, and returns a ready future; when_all gathers here
// and when_any answers here. Under AddressSanitizer each of these was a
// heap-use-after-free of the pool.
TEST_P(continuation_test, then_on_a_ready_future_whose_pool_is_gone_runs_here) {
  auto pool = std::make_unique<weft::pool>(options());
  weft::future<int> f = pool->submit([] { return 41; });
  weft::future<void> v = pool->submit([] {});
  weft::future<int> failed = pool->submit([]() -> int { throw std::runtime_error("gone"); });
  f.wait();
  v.wait();
  failed.wait();
  pool.reset();
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> ran{false};
  weft::future<int> g = std::move(f).then([&](int x) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_FALSE(weft::this_worker::index().has_value());
    ran.store(true);
    return x + 1;
  });
  EXPECT_FALSE(f.valid());
  EXPECT_TRUE(ran.load());  // inside then: there is no pool to run it
  EXPECT_TRUE(g.ready());
  // A ready future without a pool chains the same way.
  weft::future<std::string> h = std::move(g).then([](int x) { return std::to_string(x); });
  EXPECT_TRUE(h.ready());
  EXPECT_EQ(h.get(), "42");
  bool void_ran = false;
  weft::future<void> w = std::move(v).then([&] { void_ran = true; });
  EXPECT_TRUE(void_ran);
  EXPECT_EQ(std::move(w).then([] { return 7; }).get(), 7);
  bool skipped = true;
  weft::future<void> after = std::move(failed).then([&](int) { skipped = false; });
  EXPECT_TRUE(after.ready());
  EXPECT_THROW(after.get(), std::runtime_error);
  EXPECT_TRUE(skipped);
  // f's exception lands in the returned future, as it would in a job.
  weft::future<int> thrown =
      weft::when_all(std::vector<weft::future<int>>{}).then([](std::vector<int>) -> int {
        throw std::logic_error("from f");
      });
  EXPECT_THROW(thrown.get(), std::logic_error);
}

// The pool's storage may hold another pool by the time the future is
// chained: the continuation must not go to that pool either. (Before, it
// was counted and run by the new pool: this failed without a sanitizer.)
TEST_P(continuation_test, a_future_never_reaches_a_new_pool_in_its_old_pools_place) {
  std::optional<weft::pool> pool{std::in_place, options()};
  weft::future<int> f = pool->submit([] { return 1; });
  std::vector<weft::future<int>> all;
  std::vector<weft::future<int>> any;
  for (int i = 0; i < 3; ++i) {
    all.push_back(pool->submit([i] { return i; }));
    any.push_back(pool->submit([i] { return i; }));
  }
  pool->wait();
  pool.reset();
  pool.emplace(options());  // the same address, another pool
  std::atomic<bool> on_worker{false};
  weft::future<int> g = std::move(f).then([&](int x) {
    on_worker.store(weft::this_worker::index().has_value());
    return x + 1;
  });
  weft::future<std::vector<int>> gathered = weft::when_all(std::move(all));
  weft::future<std::size_t> first = weft::when_any(any);
  EXPECT_TRUE(g.ready());
  EXPECT_TRUE(gathered.ready());
  EXPECT_TRUE(first.ready());
  EXPECT_EQ(g.get(), 2);
  EXPECT_FALSE(on_worker.load());
  EXPECT_EQ(gathered.get(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(first.get(), 0U);
  pool->wait();
  EXPECT_EQ(pool->stats().total.jobs, 0U)
      << "a continuation ran on the pool that took the old one's place";
}

TEST_P(continuation_test, when_all_and_when_any_of_futures_whose_pool_is_gone) {
  auto pool = std::make_unique<weft::pool>(options());
  std::vector<weft::future<int>> all;
  std::vector<weft::future<int>> any;
  std::vector<weft::future<void>> voids;
  std::vector<weft::future<int>> failing;
  for (int i = 0; i < 4; ++i) {
    all.push_back(pool->submit([i] { return i * 10; }));
    any.push_back(pool->submit([i] { return i; }));
    voids.push_back(pool->submit([] {}));
    failing.push_back(pool->submit([i]() -> int {
      if (i >= 2) throw std::runtime_error(std::to_string(i));
      return i;
    }));
  }
  pool->wait();
  pool.reset();
  weft::future<std::vector<int>> gathered = weft::when_all(std::move(all));
  EXPECT_TRUE(gathered.ready());
  EXPECT_EQ(gathered.get(), (std::vector<int>{0, 10, 20, 30}));
  weft::future<std::size_t> first = weft::when_any(any);
  EXPECT_TRUE(first.ready());
  EXPECT_EQ(first.get(), 0U);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(any[static_cast<std::size_t>(i)].get(), i);
  EXPECT_NO_THROW(weft::when_all(std::move(voids)).get());
  try {
    (void)weft::when_all(std::move(failing)).get();
    FAIL() << "the lowest index's exception was lost";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string{e.what()}, "2");
  }
}

// A collection whose first future's pool is gone runs on the pool of a
// later future that still has one.
TEST_P(continuation_test, a_collection_runs_on_a_pool_that_is_still_there) {
  auto gone = std::make_unique<weft::pool>(options());
  weft::future<int> early = gone->submit([] { return 1; });
  weft::future<int> early_too = gone->submit([] { return 1; });
  early.wait();
  early_too.wait();
  gone.reset();
  weft::pool live{options()};
  std::atomic<bool> open{false};
  std::vector<weft::future<int>> all;
  all.push_back(std::move(early));
  all.push_back(live.submit([&open] {
    while (!open.load()) std::this_thread::yield();
    return 2;
  }));
  weft::future<std::vector<int>> gathered = weft::when_all(std::move(all));
  std::vector<weft::future<int>> any;
  any.push_back(std::move(early_too));
  any.push_back(live.submit([] { return 3; }));
  weft::future<std::size_t> first = weft::when_any(any);
  open.store(true);
  EXPECT_EQ(gathered.get(), (std::vector<int>{1, 2}));
  EXPECT_EQ(first.get(), 0U);  // ready from the start
  EXPECT_EQ(any[1].get(), 3);
  live.wait();
}

// then on a future whose job has finished, while its pool's destructor
// runs: the pool takes no work from outside any more, and f runs here (it
// used to throw pool_closed). A future whose job has not finished cannot
// run f here: that then throws pool_closed, and the future stays valid.
TEST_P(continuation_test, then_on_a_ready_future_while_its_pool_is_destroyed_runs_here) {
  std::atomic<bool> release{false};
  auto* pool = new weft::pool(options());
  weft::future<int> ready = pool->submit([] { return 5; });
  std::vector<weft::future<int>> ready_ones;
  ready_ones.push_back(pool->submit([] { return 0; }));
  ready.wait();
  ready_ones[0].wait();
  // Holds the destructor up until we have seen pool_closed.
  weft::future<int> held = pool->submit([&release] {
    while (!release.load()) std::this_thread::sleep_for(100us);
    return 6;
  });
  std::thread destroyer{[pool] { delete pool; }};
  struct release_and_join {
    std::atomic<bool>& release;
    std::thread& destroyer;
    ~release_and_join() {
      release.store(true);
      destroyer.join();
    }
  } const at_end{release, destroyer};
  bool closed = false;
  while (!closed) {
    try {
      pool->spawn([] {});
    } catch (const weft::pool_closed&) {
      closed = true;
    }
  }
  try {
    bool ran = false;
    weft::future<int> g = std::move(ready).then([&](int x) {
      ran = true;
      return x * 2;
    });
    EXPECT_TRUE(ran);  // inside then
    EXPECT_EQ(g.get(), 10);
    EXPECT_EQ(weft::when_any(ready_ones).get(), 0U);
  } catch (const weft::pool_closed&) {
    ADD_FAILURE() << "a future whose job had finished was refused by its closing pool";
  }
  EXPECT_THROW((void)std::move(held).then([](int x) { return x; }), weft::pool_closed);
  ASSERT_TRUE(held.valid());
  std::vector<weft::future<int>> one;
  one.push_back(std::move(held));
  EXPECT_THROW((void)weft::when_any(one), weft::pool_closed);
  release.store(true);
  EXPECT_EQ(one[0].get(), 6);
}

// Chaining futures, finished or not, while another thread destroys their
// pool: each call either gives its job to the pool (which waits for it),
// runs here (finished futures), or throws pool_closed (unfinished ones once
// the destructor has begun); it never touches the pool once it is gone.
TEST_P(continuation_test, chaining_while_the_pool_is_destroyed) {
  const std::size_t rounds = weft::test::scaled(300, 30);
  for (std::size_t r = 0; r < rounds; ++r) {
    auto* pool = new weft::pool(options());
    weft::future<int> ready = pool->submit([] { return 1; });
    std::vector<weft::future<int>> all;
    std::vector<weft::future<int>> any;
    for (int i = 0; i < 3; ++i) {
      all.push_back(pool->submit([i] { return i; }));
      any.push_back(pool->submit([i] { return i; }));
    }
    ready.wait();
    for (auto& f : all) f.wait();
    for (auto& f : any) f.wait();
    weft::future<int> running = pool->submit([r] {
      if (r % 2 == 0) std::this_thread::sleep_for(std::chrono::microseconds{r % 50});
      return 2;
    });
    std::atomic<bool> go{false};
    std::thread destroyer{[pool, &go] {
      while (!go.load()) std::this_thread::yield();
      delete pool;
    }};
    go.store(true);
    if (r % 3 == 1) std::this_thread::yield();
    EXPECT_EQ(std::move(ready).then([](int x) { return x + 1; }).get(), 2);
    EXPECT_EQ(weft::when_all(std::move(all)).get(), (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(weft::when_any(any).get(), 0U);
    try {
      EXPECT_EQ(std::move(running).then([](int x) { return x + 1; }).get(), 3);
    } catch (const weft::pool_closed&) {
      EXPECT_EQ(running.get(), 2);
    }
    destroyer.join();
  }
}

// when_all and when_any of nothing, as the Concurrency TS has them: a ready
// future of an empty vector, and a ready future of index size_t(-1). Every
// call a future has works on such a future, which has no pool.
TEST(continuation_without_a_pool, when_all_and_when_any_of_nothing_are_ready) {
  weft::future<std::vector<int>> all = weft::when_all(std::vector<weft::future<int>>{});
  EXPECT_TRUE(all.valid());
  EXPECT_TRUE(all.ready());
  EXPECT_FALSE(all.cancel());
  EXPECT_NO_THROW(all.wait());
  EXPECT_EQ(all.wait_for(0s), std::future_status::ready);
  EXPECT_EQ(all.wait_for(1h), std::future_status::ready);
  EXPECT_EQ(all.wait_until(std::chrono::steady_clock::now()), std::future_status::ready);
  EXPECT_EQ(all.wait_until(std::chrono::system_clock::now() + 1h), std::future_status::ready);
  EXPECT_TRUE(all.get().empty());
  EXPECT_FALSE(all.valid());

  EXPECT_NO_THROW(weft::when_all(std::vector<weft::future<void>>{}).get());

  std::vector<weft::future<int>> none;
  weft::future<std::size_t> any = weft::when_any(none);
  EXPECT_TRUE(any.ready());
  EXPECT_EQ(any.wait_for(0s), std::future_status::ready);
  EXPECT_FALSE(any.cancel());
  EXPECT_EQ(any.get(), static_cast<std::size_t>(-1));

  // Chained, collected, and dropped unread.
  weft::future<std::size_t> n =
      weft::when_all(std::vector<weft::future<int>>{}).then([](std::vector<int> v) {
        return v.size() + 1;
      });
  EXPECT_TRUE(n.ready());
  std::vector<weft::future<std::size_t>> poolless;
  poolless.push_back(std::move(n));
  poolless.push_back(weft::when_any(none));
  EXPECT_EQ(weft::when_any(poolless).get(), 0U);
  weft::future<std::vector<std::size_t>> both = weft::when_all(std::move(poolless));
  EXPECT_TRUE(both.ready());
  EXPECT_EQ(both.get(), (std::vector<std::size_t>{1, static_cast<std::size_t>(-1)}));
  (void)weft::when_all(std::vector<weft::future<int>>{});
  std::vector<weft::future<std::vector<int>>> nested;
  nested.push_back(weft::when_all(std::vector<weft::future<int>>{}));
  EXPECT_TRUE(weft::when_all(std::move(nested)).get().at(0).empty());
}

// A poolless future mixed with futures of a pool: the collection runs on
// that pool.
TEST_P(continuation_test, poolless_and_pool_futures_together) {
  weft::pool pool{options()};
  std::vector<weft::future<std::size_t>> fs;
  std::vector<weft::future<int>> none;
  fs.push_back(weft::when_any(none));
  fs.push_back(pool.submit([] { return std::size_t{4}; }));
  std::vector<std::size_t> values = weft::when_all(std::move(fs)).get();
  EXPECT_EQ(values, (std::vector<std::size_t>{static_cast<std::size_t>(-1), 4}));
  weft::future<int> later = pool.submit([] { return 1; });
  std::vector<weft::future<int>> mixed;
  mixed.push_back(
      weft::when_all(std::vector<weft::future<int>>{}).then([](std::vector<int>) { return 0; }));
  mixed.push_back(std::move(later));
  EXPECT_EQ(weft::when_any(mixed).get(), 0U);
  EXPECT_EQ(mixed[1].get(), 1);
  pool.wait();
}

TEST_P(continuation_test, batches_of_zero_one_and_many) {
  weft::pool pool{options()};
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, weft::test::scaled(20'000, 1000)}) {
    std::atomic<std::size_t> sum{0};
    std::vector<std::function<void()>> jobs;
    for (std::size_t i = 0; i < n; ++i) jobs.emplace_back([i, &sum] { sum.fetch_add(i + 1); });
    pool.spawn_all(jobs);
    pool.wait();
    EXPECT_EQ(sum.load(), n * (n + 1) / 2) << n;

    auto makers = std::views::iota(std::size_t{0}, n) |
                  std::views::transform([](std::size_t i) { return [i] { return i * i; }; });
    std::vector<weft::future<std::size_t>> futures = pool.submit_all(makers);
    ASSERT_EQ(futures.size(), n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(futures[i].get(), i * i);
  }
}

// A callable whose copy throws when it is the `bad`-th of its batch: a
// batch copies its callables while building, so a batch holding one fails
// part way, after some jobs were counted and built.
struct copy_fails {
  std::size_t index;
  std::size_t bad;
  std::atomic<int>* ran;
  copy_fails(std::size_t i, std::size_t b, std::atomic<int>* r) : index(i), bad(b), ran(r) {}
  copy_fails(const copy_fails& o) : index(o.index), bad(o.bad), ran(o.ran) {
    if (index == bad) throw std::runtime_error("copy " + std::to_string(index));
  }
  copy_fails& operator=(const copy_fails&) = delete;
  ~copy_fails() = default;
  int operator()() const {
    ran->fetch_add(1);
    return static_cast<int>(index);
  }
};

// Builds a batch of n whose callable at `bad` fails to copy, and submits it
// with `submit`, which must throw; `sized` picks a vector (counted as a
// whole) or a view that does not know its size (counted job by job). Jobs
// that run count themselves in `ran`.
template <class Submit>
void submit_failing_batch(std::size_t n, std::size_t bad, bool sized, std::atomic<int>& ran,
                          Submit submit) {
  std::vector<copy_fails> callables;
  callables.reserve(n);  // growing would copy
  for (std::size_t i = 0; i < n; ++i) callables.emplace_back(i, bad, &ran);
  if (sized) {
    EXPECT_THROW(submit(callables), std::runtime_error);
  } else {
    auto unsized = callables | std::views::filter([](const copy_fails&) { return true; });
    static_assert(!std::ranges::sized_range<decltype(unsized)>);
    EXPECT_THROW(submit(unsized), std::runtime_error);
  }
}

// All or nothing: a batch that fails while it is built runs none of its
// jobs, and leaves the pool's counts balanced (wait() and the destructor
// return), for batches counted as a whole and job by job, from outside and
// from a job.
TEST_P(continuation_test, a_batch_that_fails_part_way_runs_nothing_and_counts_nothing) {
  weft::pool pool{options()};
  const std::size_t n = 40;
  std::atomic<int> ran{0};
  for (bool sized : {true, false}) {
    for (std::size_t bad : {std::size_t{0}, std::size_t{17}, n - 1}) {
      submit_failing_batch(n, bad, sized, ran, [&](auto& range) { pool.spawn_all(range); });
      submit_failing_batch(n, bad, sized, ran, [&](auto& range) { (void)pool.submit_all(range); });
      pool.wait();  // would hang if a counted job were lost
      pool.submit([&] {
            submit_failing_batch(n, bad, sized, ran, [&](auto& range) { pool.spawn_all(range); });
            submit_failing_batch(n, bad, sized, ran,
                                 [&](auto& range) { (void)pool.submit_all(range); });
          })
          .get();
      pool.wait();
    }
  }
  EXPECT_EQ(ran.load(), 0) << "a failed batch ran a job";
  // Still whole: a good batch runs, and wait() waits for all of it.
  std::vector<copy_fails> good;
  good.reserve(n);
  for (std::size_t i = 0; i < n; ++i) good.emplace_back(i, n, &ran);
  pool.spawn_all(good);
  pool.wait();
  EXPECT_EQ(ran.load(), static_cast<int>(n));
  const std::vector<int> values = weft::when_all(pool.submit_all(good)).get();
  ASSERT_EQ(values.size(), n);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(values[i], static_cast<int>(i));
}

TEST_P(continuation_test, spawn_all_exceptions_reach_the_pools_error_path) {
  std::atomic<int> errors{0};
  std::atomic<int> ran{0};
  weft::pool_options o = options();
  o.on_error = [&](const std::exception_ptr&) { errors.fetch_add(1); };
  weft::pool pool{o};
  std::vector<std::function<void()>> jobs;
  for (int i = 0; i < 30; ++i) {
    jobs.emplace_back([i, &ran] {
      ran.fetch_add(1);
      if (i % 10 == 3) throw std::runtime_error("batch");
    });
  }
  pool.spawn_all(jobs);
  pool.wait();
  EXPECT_EQ(ran.load(), 30);
  EXPECT_EQ(errors.load(), 3);

  weft::pool plain{options()};
  plain.spawn_all(std::vector<std::function<void()>>{[] { throw std::logic_error("one"); }});
  EXPECT_THROW(plain.wait(), std::logic_error);
  EXPECT_NO_THROW(plain.wait());
}

TEST_P(continuation_test, submit_all_holds_each_exception_in_its_future) {
  weft::pool pool{options()};
  std::vector<std::function<int()>> jobs;
  for (int i = 0; i < 10; ++i) {
    jobs.emplace_back([i]() -> int {
      if (i == 4) throw std::runtime_error("four");
      return i;
    });
  }
  auto futures = pool.submit_all(jobs);
  for (int i = 0; i < 10; ++i) {
    if (i == 4) {
      EXPECT_THROW(futures[4].get(), std::runtime_error);
    } else {
      EXPECT_EQ(futures[static_cast<std::size_t>(i)].get(), i);
    }
  }
}

TEST_P(continuation_test, everything_from_inside_jobs) {
  weft::pool pool{options()};
  const std::size_t n = weft::test::scaled(2'000, 50);
  auto outer = pool.submit([&pool, n] {
    std::atomic<int> runs{0};
    int chain = add_chain(pool, static_cast<int>(n), -1, runs).get();

    auto makers = std::views::iota(std::size_t{0}, n) |
                  std::views::transform([](std::size_t i) { return [i] { return i; }; });
    std::vector<std::size_t> all = weft::when_all(pool.submit_all(makers)).get();
    std::size_t sum = std::accumulate(all.begin(), all.end(), std::size_t{0});

    std::atomic<std::size_t> spawned{0};
    std::vector<std::function<void()>> jobs(n, [&spawned] { spawned.fetch_add(1); });
    pool.spawn_all(jobs);
    std::vector<weft::future<int>> some;
    some.push_back(pool.submit([] { return 1; }));
    const std::size_t any = weft::when_any(some).get();
    pool.wait_until([&] { return spawned.load() == n; });
    return static_cast<std::size_t>(chain) + sum + any + spawned.load();
  });
  EXPECT_EQ(outer.get(), n + n * (n - 1) / 2 + 0 + n);
}

INSTANTIATE_TEST_SUITE_P(workers, continuation_test,
                         ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
