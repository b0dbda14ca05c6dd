// pool_options::on_worker_start and on_worker_stop (docs/control.md,
// "Worker hooks"): called once per worker, on that worker's thread, the
// start before its first job and the stop after its last; their
// exceptions; sequential mode, which has no workers and calls neither.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <weft/detail/platform.hpp>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;
namespace platform = weft::detail::platform;

// What the hooks saw, per worker index.
struct record {
  explicit record(std::size_t n) : start_thread(n), stop_thread(n), starts(n), stops(n) {
    for (std::size_t i = 0; i < n; ++i) {
      starts[i].store(0);
      stops[i].store(0);
    }
  }
  std::mutex m;
  std::vector<std::thread::id> start_thread;  // guarded by m
  std::vector<std::thread::id> stop_thread;   // guarded by m
  std::vector<std::atomic<int>> starts;
  std::vector<std::atomic<int>> stops;
  std::atomic<int> wrong_index{0};  // this_worker::index() differed from the argument

  weft::pool_options options(std::size_t threads) {
    return {.threads = threads,
            .on_worker_start =
                [this](std::size_t i) {
                  if (weft::this_worker::index() != i) wrong_index.fetch_add(1);
                  {
                    const std::lock_guard lock{m};
                    start_thread[i] = std::this_thread::get_id();
                  }
                  starts[i].fetch_add(1);
                },
            .on_worker_stop =
                [this](std::size_t i) {
                  if (weft::this_worker::index() != i) wrong_index.fetch_add(1);
                  {
                    const std::lock_guard lock{m};
                    stop_thread[i] = std::this_thread::get_id();
                  }
                  stops[i].fetch_add(1);
                }};
  }
};

// Runs one job on every worker at once; returns each worker's thread id.
std::vector<std::thread::id> thread_of_each_worker(weft::pool& pool,
                                                   const std::function<void(std::size_t)>& also) {
  const std::size_t n = pool.size();
  std::vector<std::thread::id> ids(n);
  std::atomic<std::size_t> arrived{0};
  std::vector<weft::future<void>> jobs;
  for (std::size_t i = 0; i < n; ++i) {
    jobs.push_back(pool.submit([&] {
      const std::size_t index = weft::this_worker::index().value();
      ids[index] = std::this_thread::get_id();
      also(index);
      arrived.fetch_add(1);
      const auto until = std::chrono::steady_clock::now() + 20s;
      while (arrived.load() < n && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
    }));
  }
  for (auto& j : jobs) j.get();
  EXPECT_EQ(arrived.load(), n);
  return ids;
}

class worker_hooks : public ::testing::TestWithParam<std::size_t> {};

TEST_P(worker_hooks, each_worker_starts_before_its_first_job_and_stops_after_its_last) {
  const std::size_t n = GetParam();
  record r{n};
  std::atomic<int> job_before_start{0};
  std::atomic<int> job_after_stop{0};
  std::vector<std::thread::id> ran_on;
  {
    weft::pool pool{r.options(n)};
    // The constructor returns once every start hook has.
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(r.starts[i].load(), 1) << "worker " << i;
    auto check = [&](std::size_t i) {
      if (r.starts[i].load() != 1) job_before_start.fetch_add(1);
      if (r.stops[i].load() != 0) job_after_stop.fetch_add(1);
    };
    ran_on = thread_of_each_worker(pool, check);
    // Jobs keep coming until the destructor; none may run after a stop.
    for (int k = 0; k < 2000; ++k) {
      pool.spawn([&] {
        if (auto i = weft::this_worker::index(); i && *i < n) check(*i);
      });
    }
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(r.stops[i].load(), 0) << "worker " << i;
  }
  EXPECT_EQ(job_before_start.load(), 0);
  EXPECT_EQ(job_after_stop.load(), 0);
  EXPECT_EQ(r.wrong_index.load(), 0);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(r.starts[i].load(), 1) << "worker " << i;
    EXPECT_EQ(r.stops[i].load(), 1) << "worker " << i;
    // On the worker's own thread, both.
    EXPECT_EQ(r.start_thread[i], ran_on[i]) << "worker " << i;
    EXPECT_EQ(r.stop_thread[i], ran_on[i]) << "worker " << i;
    EXPECT_NE(r.start_thread[i], std::this_thread::get_id());
  }
}

TEST_P(worker_hooks, hooks_are_not_jobs) {
  const std::size_t n = GetParam();
  std::atomic<int> refused{0};
  std::atomic<int> other_pool_ran{0};
  weft::pool other{{.threads = 1}};
  {
    // Set once constructed; the stop hooks run in the destructor.
    weft::pool* self = nullptr;
    weft::pool pool{{.threads = n,
                     .on_worker_start =
                         [&](std::size_t) {
                           // Another pool's work may be waited for: the hook runs as a
                           // thread that is not a worker.
                           if (other.submit([] { return 1; }).get() == 1)
                             other_pool_ran.fetch_add(1);
                           EXPECT_EQ(weft::join([] { return 2; }, [] { return 3; }),
                                     (std::pair<int, int>{2, 3}));
                         },
                     .on_worker_stop =
                         [&](std::size_t) {
                           // The pool is closing: a submission from a stop hook is refused.
                           try {
                             self->spawn([] {});
                           } catch (const weft::pool_closed&) {
                             refused.fetch_add(1);
                           }
                         }}};
    self = &pool;
    pool.wait();
  }
  EXPECT_EQ(other_pool_ran.load(), static_cast<int>(n));
  EXPECT_EQ(refused.load(), static_cast<int>(n));
}

TEST_P(worker_hooks, a_parallel_loop_in_a_hook_runs_on_the_pool_it_was_given) {
  // this_worker::index() is set in a hook, yet the hook's thread runs no
  // pool's jobs: a loop on `other` runs on other's workers (and the hook's
  // thread), never on default_pool()'s.
  const std::size_t n = GetParam();
  std::mutex m;
  std::vector<std::thread::id> others;  // other's worker threads
  weft::pool other{{.threads = 2, .on_worker_start = [&](std::size_t) {
                      const std::lock_guard lock{m};
                      others.push_back(std::this_thread::get_id());
                    }}};
  std::atomic<int> elsewhere{0};
  std::atomic<int> bodies{0};
  weft::pool pool{{.threads = n, .on_worker_start = [&](std::size_t) {
                     const std::thread::id hook = std::this_thread::get_id();
                     weft::for_each_index(
                         other, std::size_t{0}, std::size_t{256},
                         [&](std::size_t) {
                           bodies.fetch_add(1);
                           const std::thread::id me = std::this_thread::get_id();
                           const std::lock_guard lock{m};
                           if (me != hook &&
                               std::find(others.begin(), others.end(), me) == others.end()) {
                             elsewhere.fetch_add(1);
                           }
                         },
                         weft::grain{1});
                   }}};
  EXPECT_EQ(bodies.load(), static_cast<int>(256 * n));
  EXPECT_EQ(elsewhere.load(), 0);
}

TEST_P(worker_hooks, a_start_hook_names_the_worker_thread) {
  const std::size_t n = GetParam();
  weft::pool pool{{.threads = n, .name = "hooked", .on_worker_start = [](std::size_t i) {
                     // weft has named it already.
                     EXPECT_EQ(platform::thread_name(), "hooked-" + std::to_string(i));
                     platform::name_this_thread("mine-" + std::to_string(i));
                   }}};
  std::mutex m;
  std::vector<std::string> names(n);
  thread_of_each_worker(pool, [&](std::size_t i) {
    std::string name = platform::thread_name();
    const std::lock_guard lock{m};
    names[i] = std::move(name);
  });
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(names[i], "mine-" + std::to_string(i));
}

TEST_P(worker_hooks, a_throwing_start_hook_fails_the_construction) {
  const std::size_t n = GetParam();
  if (n == 0) GTEST_SKIP() << "sequential mode calls no hook";
  record r{n};
  weft::pool_options options = r.options(n);
  auto counted = std::move(options.on_worker_start);
  const std::size_t failing = n - 1;
  options.on_worker_start = [&, counted](std::size_t i) {
    if (i == failing) throw std::runtime_error("no NUMA node for worker " + std::to_string(i));
    counted(i);
  };
  try {
    weft::pool pool{std::move(options)};
    ADD_FAILURE() << "the pool was constructed";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string{e.what()}, "no NUMA node for worker " + std::to_string(failing));
  }
  // Every other worker started, and was stopped and joined before the
  // constructor threw; the failing one ran no stop hook.
  for (std::size_t i = 0; i < n; ++i) {
    const int expected = i == failing ? 0 : 1;
    EXPECT_EQ(r.starts[i].load(), expected) << "worker " << i;
    EXPECT_EQ(r.stops[i].load(), expected) << "worker " << i;
  }
}

TEST_P(worker_hooks, a_throwing_stop_hook_reaches_on_error) {
  const std::size_t n = GetParam();
  std::mutex m;
  std::vector<std::string> errors;
  {
    weft::pool pool{
        {.threads = n,
         .on_error =
             [&](std::exception_ptr e) {
               try {
                 std::rethrow_exception(e);
               } catch (const std::exception& x) {
                 const std::lock_guard lock{m};
                 errors.emplace_back(x.what());
               }
             },
         .on_worker_stop =
             [](std::size_t i) { throw std::runtime_error("stop " + std::to_string(i)); }}};
    EXPECT_EQ(pool.submit([] { return 5; }).get(), 5);
  }
  EXPECT_EQ(errors.size(), n);
}

TEST_P(worker_hooks, a_throwing_stop_hook_without_on_error_is_printed) {
  const std::size_t n = GetParam();
  testing::internal::CaptureStderr();
  {
    weft::pool pool{{.threads = n, .name = "stopper", .on_worker_stop = [](std::size_t) {
                       throw std::runtime_error("stop failed");
                     }}};
    pool.wait();
  }
  const std::string out = testing::internal::GetCapturedStderr();
  if (n == 0) {
    EXPECT_EQ(out, "");
  } else {
    EXPECT_NE(out.find("pool 'stopper'"), std::string::npos) << out;
    EXPECT_NE(out.find(std::to_string(n) + " exception(s)"), std::string::npos) << out;
    EXPECT_NE(out.find("stop failed"), std::string::npos) << out;
  }
}

TEST(worker_hooks_sequential, sequential_mode_calls_no_hook) {
  std::atomic<int> calls{0};
  {
    weft::pool pool{{.threads = 0,
                     .on_worker_start = [&](std::size_t) { calls.fetch_add(1); },
                     .on_worker_stop = [&](std::size_t) { calls.fetch_add(1); }}};
    EXPECT_EQ(pool.submit([] { return 1; }).get(), 1);
  }
  EXPECT_EQ(calls.load(), 0);
}

TEST(worker_hooks_sequential, this_worker_index_is_empty_again_after_a_hook) {
  std::atomic<int> bad{0};
  weft::pool pool{{.threads = 2, .on_worker_start = [&](std::size_t) {
                     if (!weft::this_worker::index()) bad.fetch_add(1);
                   }}};
  EXPECT_EQ(bad.load(), 0);
  EXPECT_FALSE(weft::this_worker::index());
  // And in jobs, the worker's index as usual.
  for (int k = 0; k < 100; ++k) {
    EXPECT_LT(pool.submit([] { return weft::this_worker::index().value(); }).get(), pool.slots());
  }
}

INSTANTIATE_TEST_SUITE_P(workers, worker_hooks, ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

}  // namespace
