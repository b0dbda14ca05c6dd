// weft::flow: what each access mode orders and lets overlap, wait(x), after(),
// nested flows, exceptions, cancel, the window, dump() and misuse, over 0, 1,
// 2, 4 and 8 workers. tests/stress/flow_stress_test.cpp has the random
// programs checked against a sequential run, and the memory bounds.
#include <gtest/gtest.h>
#ifndef _WIN32
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>
#include <weft/graph.hpp>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// How long a task waits for something that must happen: far longer than it
// ever takes, so that only a wrong flow makes a test wait that long.
constexpr auto generous = 10s;

class flow_test : public ::testing::TestWithParam<std::size_t> {
 protected:
  [[nodiscard]] weft::pool_options options() const { return {.threads = GetParam()}; }
  [[nodiscard]] bool sequential() const { return GetParam() == 0; }
};

// Yields until `flag` is set; false if `limit` passed first.
bool await_flag(const std::atomic<bool>& flag, clock_type::duration limit = generous) {
  const auto until = clock_type::now() + limit;
  while (!flag.load(std::memory_order_acquire)) {
    if (clock_type::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

// A few microseconds of work, so that overlapping tasks really overlap.
void spin_a_little() {
  for (int i = 0; i < 20; ++i) std::this_thread::yield();
}

// Two tasks that each wait until the other has started: each reports
// whether it saw the other start (it gives up after `generous`), so both
// report true exactly when they ran at the same time.
struct rendezvous {
  std::array<std::atomic<bool>, 2> started{};
  std::array<std::atomic<bool>, 2> met{};

  void arrive(std::size_t i) {
    started[i].store(true, std::memory_order_release);
    met[i].store(await_flag(started[1 - i]));
  }
  [[nodiscard]] bool both_met() const { return met[0].load() && met[1].load(); }
};

// scenario()'s exit code; 3, and what it threw on stderr, if it threw.
int run_scenario(const std::function<int()>& scenario) {
  try {
    return scenario();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: uncaught exception: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "child: uncaught exception\n");
  }
  return 3;
}

// Runs `scenario` in a child process, for the scenarios that hang when the
// flow is wrong: a deadlocked pool can neither finish nor be destroyed, so
// the child is killed after `limit_seconds` instead and the test fails. The
// scenario returns 0 when all its checks passed; it explains failures on
// stderr.
//
// Windows has no fork(): there the scenario runs on a thread of this
// process instead, and if it hangs the process prints why and ends with
// exit code 1 (the deadlocked pool could not be destroyed).
::testing::AssertionResult finishes_in_child(const std::function<int()>& scenario,
                                             unsigned limit_seconds = 10) {
  std::fflush(nullptr);
#ifdef _WIN32
  auto code = std::make_shared<std::promise<int>>();
  std::future<int> result = code->get_future();
  std::thread{[scenario, code] { code->set_value(run_scenario(scenario)); }}.detach();
  if (result.wait_for(std::chrono::seconds{limit_seconds}) != std::future_status::ready) {
    std::fprintf(stderr, "the scenario hung: ending the test process after %u s\n", limit_seconds);
    std::fflush(nullptr);
    std::_Exit(1);
  }
  const int status = result.get();
  if (status == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "the scenario failed with exit code " << status << " (see its stderr)";
#else
  const pid_t pid = ::fork();
  if (pid < 0) return ::testing::AssertionFailure() << "fork() failed";
  if (pid == 0) {
    ::alarm(limit_seconds);
    const int code = run_scenario(scenario);
    // _Exit: nothing of the parent's (atexit handlers, sanitizer reports
    // the parent had before the fork) decides the child's exit code.
    std::fflush(nullptr);
    std::_Exit(code);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return ::testing::AssertionFailure() << "waitpid() failed";
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return ::testing::AssertionSuccess();
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
    return ::testing::AssertionFailure()
           << "the scenario hung: killed after " << limit_seconds << " s (see its stderr)";
  }
  if (WIFEXITED(status)) {
    return ::testing::AssertionFailure()
           << "the scenario failed with exit code " << WEXITSTATUS(status) << " (see its stderr)";
  }
  return ::testing::AssertionFailure()
         << "the scenario was killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
#endif
}

// qemu-user 7.2 aborts in the child of a multi-threaded process (an
// assertion in its TCG), whatever the child runs.
bool fork_aborts() {
  const char* emulator = weft::test::emulator();
  return emulator != nullptr && std::string_view{emulator}.starts_with("qemu");
}

// Prints a failed check of a child scenario; returns 1 for the exit code.
int child_failure(const char* what) {
  std::fprintf(stderr, "child: check failed: %s\n", what);
  return 1;
}

// ---------------------------------------------------------------------------
// What each mode orders

TEST_P(flow_test, reads_see_the_last_write_and_writes_wait_for_reads) {
  weft::pool pool{options()};
  weft::flow f{pool};
  std::uint64_t x = 0;
  std::atomic<int> wrong{0};
  std::atomic<int> reads_done{0};
  for (std::uint64_t round = 1; round <= 5; ++round) {
    f.emplace(
        [&reads_done, &wrong, round](std::uint64_t& v) {
          // Every read of the previous round has finished.
          if (reads_done.load() != static_cast<int>((round - 1) * 20)) wrong.fetch_add(1);
          v = round;
        },
        weft::write(x));
    for (int r = 0; r < 20; ++r) {
      f.emplace(
          [&reads_done, &wrong, round](const std::uint64_t& v) {
            if (v != round) wrong.fetch_add(1);
            spin_a_little();
            reads_done.fetch_add(1);
          },
          weft::read(x));
    }
  }
  f.wait();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(reads_done.load(), 100);
  EXPECT_EQ(x, 5U);
}

// A run of random modes on one object: every task checks that no task of
// another mode is inside, and that nobody else is inside with a writer or
// a commute task; readers check the value against the sequential one.
TEST_P(flow_test, accesses_of_different_modes_never_overlap) {
  weft::pool pool{options()};
  weft::flow f{pool};
  std::uint64_t x = 1;
  std::uint64_t expected = 1;  // x after the tasks emplaced so far, in order
  std::array<std::atomic<int>, 5> inside{};
  std::atomic<int> violations{0};
  std::atomic<int> wrong_reads{0};
  auto enter = [&](weft::access_mode m) {
    const auto i = static_cast<std::size_t>(m);
    const int before = inside[i].fetch_add(1);
    const bool exclusive = m == weft::access_mode::write || m == weft::access_mode::commute;
    if (exclusive && before != 0) violations.fetch_add(1);
    for (std::size_t j = 0; j < inside.size(); ++j) {
      if (j != i && inside[j].load() != 0) violations.fetch_add(1);
    }
    spin_a_little();
    for (std::size_t j = 0; j < inside.size(); ++j) {
      if (j != i && inside[j].load() != 0) violations.fetch_add(1);
    }
    if (exclusive && inside[i].load() != 1) violations.fetch_add(1);
  };
  auto leave = [&](weft::access_mode m) { inside[static_cast<std::size_t>(m)].fetch_sub(1); };

  std::mt19937 rng(11);
  weft::access_mode mode = weft::access_mode::write;
  for (int i = 0; i < 400; ++i) {
    if (rng() % 4 == 0) mode = static_cast<weft::access_mode>(rng() % 5);
    switch (mode) {
      case weft::access_mode::read:
        f.emplace(
            [&, expected](const std::uint64_t& v) {
              enter(weft::access_mode::read);
              if (v != expected) wrong_reads.fetch_add(1);
              leave(weft::access_mode::read);
            },
            weft::read(x));
        break;
      case weft::access_mode::write:
        f.emplace(
            [&](std::uint64_t& v) {
              enter(weft::access_mode::write);
              v = v * 3 + 1;
              leave(weft::access_mode::write);
            },
            weft::write(x));
        expected = expected * 3 + 1;
        break;
      case weft::access_mode::commute:
        f.emplace(
            [&](std::uint64_t& v) {
              enter(weft::access_mode::commute);
              v += 5;  // plain: two at once would also be a data race
              leave(weft::access_mode::commute);
            },
            weft::commute(x));
        expected += 5;
        break;
      case weft::access_mode::concurrent:
        f.emplace(
            [&](std::uint64_t& v) {
              enter(weft::access_mode::concurrent);
              weft::test::atomic_add(v, 7);
              leave(weft::access_mode::concurrent);
            },
            weft::concurrent(x));
        expected += 7;
        break;
      case weft::access_mode::reduce:
        f.emplace(
            [&](std::uint64_t& copy) {
              enter(weft::access_mode::reduce);
              copy += 11;
              leave(weft::access_mode::reduce);
            },
            weft::reduce(x, std::plus<>{}));
        expected += 11;
        break;
    }
  }
  f.wait();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(wrong_reads.load(), 0);
  EXPECT_EQ(x, expected);
}

TEST_P(flow_test, commute_tasks_run_one_at_a_time) {
  weft::pool pool{options()};
  weft::flow f{pool};
  std::uint64_t x = 0;
  std::uint64_t y = 0;
  std::atomic<int> in_x{0};
  std::atomic<int> in_y{0};
  std::atomic<int> violations{0};
  auto lock_x = [&] {
    if (in_x.fetch_add(1) != 0) violations.fetch_add(1);
  };
  auto lock_y = [&] {
    if (in_y.fetch_add(1) != 0) violations.fetch_add(1);
  };
  std::uint64_t expected_x = 0;
  std::uint64_t expected_y = 0;
  for (int i = 0; i < 300; ++i) {
    switch (i % 4) {
      case 0:
        f.emplace(
            [&](std::uint64_t& a) {
              lock_x();
              spin_a_little();
              a += 1;
              in_x.fetch_sub(1);
            },
            weft::commute(x));
        ++expected_x;
        break;
      case 1:
        f.emplace(
            [&](std::uint64_t& b) {
              lock_y();
              spin_a_little();
              b += 1;
              in_y.fetch_sub(1);
            },
            weft::commute(y));
        ++expected_y;
        break;
      case 2:
        // Both objects, declared x first...
        f.emplace(
            [&](std::uint64_t& a, std::uint64_t& b) {
              lock_x();
              lock_y();
              spin_a_little();
              a += 10;
              b += 10;
              in_y.fetch_sub(1);
              in_x.fetch_sub(1);
            },
            weft::commute(x), weft::commute(y));
        expected_x += 10;
        expected_y += 10;
        break;
      default:
        // ...and y first: the locks are still taken without a deadlock.
        f.emplace(
            [&](std::uint64_t& b, std::uint64_t& a) {
              lock_y();
              lock_x();
              spin_a_little();
              a += 100;
              b += 100;
              in_x.fetch_sub(1);
              in_y.fetch_sub(1);
            },
            weft::commute(y), weft::commute(x));
        expected_x += 100;
        expected_y += 100;
        break;
    }
  }
  f.wait();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(x, expected_x);
  EXPECT_EQ(y, expected_y);
}

TEST_P(flow_test, readers_run_at_the_same_time) {
  if (GetParam() < 2) GTEST_SKIP() << "two tasks at once need two workers";
  weft::pool pool{options()};
  weft::flow f{pool};
  int x = 0;
  rendezvous meet;
  std::atomic<int> saw_write{0};
  std::atomic<bool> writer_after_both{false};
  f.emplace([](int& v) { v = 42; }, weft::write(x));
  for (std::size_t i = 0; i < 2; ++i) {
    f.emplace(
        [&meet, &saw_write, i](const int& v) {
          meet.arrive(i);
          if (v == 42) saw_write.fetch_add(1);
        },
        weft::read(x));
  }
  f.emplace(
      [&](int& v) {
        writer_after_both = meet.started[0].load() && meet.started[1].load();
        v = 43;
      },
      weft::write(x));
  f.wait();
  EXPECT_TRUE(meet.both_met()) << "the two readers did not run at the same time";
  EXPECT_EQ(saw_write.load(), 2);
  EXPECT_TRUE(writer_after_both.load());
  EXPECT_EQ(x, 43);
}

TEST_P(flow_test, concurrent_tasks_run_at_the_same_time) {
  if (GetParam() < 2) GTEST_SKIP() << "two tasks at once need two workers";
  weft::pool pool{options()};
  weft::flow f{pool};
  std::uint64_t x = 0;
  rendezvous meet;
  f.emplace([](std::uint64_t& v) { v = 100; }, weft::write(x));
  for (std::size_t i = 0; i < 2; ++i) {
    f.emplace(
        [&meet, i](std::uint64_t& v) {
          meet.arrive(i);
          weft::test::atomic_add(v, i + 1);
        },
        weft::concurrent(x));
  }
  std::uint64_t seen = 0;
  f.emplace([&seen](const std::uint64_t& v) { seen = v; }, weft::read(x));
  f.wait();
  EXPECT_TRUE(meet.both_met()) << "the two concurrent tasks did not run at the same time";
  EXPECT_EQ(seen, 103U);
}

TEST_P(flow_test, reduce_tasks_run_at_the_same_time_on_private_copies) {
  if (GetParam() < 2) GTEST_SKIP() << "two tasks at once need two workers";
  weft::pool pool{options()};
  weft::flow f{pool};
  std::uint64_t x = 1000;
  rendezvous meet;
  std::atomic<int> fresh_copies{0};
  for (std::size_t i = 0; i < 2; ++i) {
    f.emplace(
        [&meet, &fresh_copies, i](std::uint64_t& copy) {
          meet.arrive(i);
          // Running at the same time, the two are on different workers:
          // each has its own copy, value-initialised.
          if (copy == 0) fresh_copies.fetch_add(1);
          copy += i + 1;
        },
        weft::reduce(x, std::plus<>{}));
  }
  std::uint64_t seen = 0;
  f.emplace([&seen](const std::uint64_t& v) { seen = v; }, weft::read(x));
  f.wait();
  EXPECT_TRUE(meet.both_met()) << "the two reduce tasks did not run at the same time";
  EXPECT_EQ(fresh_copies.load(), 2);
  EXPECT_EQ(seen, 1003U);
  EXPECT_EQ(x, 1003U);
}

TEST_P(flow_test, reductions_are_folded_before_the_next_access_and_at_waits) {
  weft::pool pool{options()};
  weft::flow f{pool};
  std::uint64_t x = 5;
  const auto max_op = [](std::uint64_t a, std::uint64_t b) { return std::max(a, b); };
  for (std::uint64_t i = 1; i <= 100; ++i) {
    f.emplace([i](std::uint64_t& copy) { copy += i; }, weft::reduce(x, std::plus<>{}));
  }
  std::uint64_t after_sum = 0;
  f.emplace([&after_sum](const std::uint64_t& v) { after_sum = v; }, weft::read(x));
  // Another run, with another operation, straight after a first one.
  for (std::uint64_t i = 1; i <= 30; ++i) {
    f.emplace([i](std::uint64_t& copy) { copy += i; }, weft::reduce(x, std::plus<>{}));
  }
  for (std::uint64_t i = 0; i < 20; ++i) {
    f.emplace([i](std::uint64_t& copy) { copy = std::max<std::uint64_t>(copy, 10'000 + i); },
              weft::reduce(x, max_op));
  }
  f.wait(x);  // folds the max run
  EXPECT_EQ(after_sum, 5U + 5050U);
  EXPECT_EQ(x, 10'019U);
  // A run left open at wait() is folded by it.
  for (std::uint64_t i = 1; i <= 10; ++i) {
    f.emplace([i](std::uint64_t& copy) { copy += i; }, weft::reduce(x, std::plus<>{}));
  }
  f.wait();
  EXPECT_EQ(x, 10'019U + 55U);
}

TEST_P(flow_test, many_readers_then_a_writer) {
  weft::pool pool{options()};
  weft::flow f{pool};
  std::uint64_t x = 0;
  std::atomic<int> readers_done{0};
  std::atomic<int> wrong{0};
  f.emplace([](std::uint64_t& v) { v = 9; }, weft::write(x));
  for (int i = 0; i < 1000; ++i) {
    f.emplace(
        [&](const std::uint64_t& v) {
          if (v != 9) wrong.fetch_add(1);
          readers_done.fetch_add(1);
        },
        weft::read(x));
  }
  f.wait(x);  // a barrier after 1000 readers
  EXPECT_EQ(readers_done.load(), 1000);
  int seen_by_writer = 0;
  f.emplace(
      [&](std::uint64_t& v) {
        seen_by_writer = readers_done.load();
        v = 10;
      },
      weft::write(x));
  f.wait();
  EXPECT_EQ(seen_by_writer, 1000);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(x, 10U);
}

TEST_P(flow_test, tasks_without_accesses_all_run) {
  weft::pool pool{options()};
  weft::flow f{pool};
  std::atomic<int> ran{0};
  for (int i = 0; i < 500; ++i) f.emplace([&ran] { ran.fetch_add(1); });
  f.wait();
  EXPECT_EQ(ran.load(), 500);
  f.wait();  // nothing left: returns at once
  weft::flow empty{pool};
  empty.wait();
}

// ---------------------------------------------------------------------------
// wait(x)

// The tasks on x of wait_for_an_object_*: a chain of writes, reads that
// check the value, then runs of commute, concurrent and reduce tasks (so
// wait(x) must fold a reduction). Returns x's value once they all ran.
std::uint64_t emplace_tasks_on(weft::flow& f, std::uint64_t& x, std::atomic<int>& wrong) {
  std::uint64_t expected = x;
  for (std::uint64_t i = 0; i < 20; ++i) {
    f.emplace([i](std::uint64_t& v) { v = v * 3 + i; }, weft::write(x));
    expected = expected * 3 + i;
    f.emplace(
        [&wrong, expected](const std::uint64_t& v) {
          if (v != expected) wrong.fetch_add(1);
        },
        weft::read(x));
  }
  for (int i = 0; i < 10; ++i) f.emplace([](std::uint64_t& v) { v += 5; }, weft::commute(x));
  for (int i = 0; i < 10; ++i) {
    f.emplace([](std::uint64_t& v) { weft::test::atomic_add(v, 2); }, weft::concurrent(x));
  }
  for (int i = 0; i < 10; ++i) {
    f.emplace([](std::uint64_t& copy) { copy += 3; }, weft::reduce(x, std::plus<>{}));
  }
  return expected + 50 + 20 + 30;
}

// The unrelated task is held back by a future of another pool that is
// released only after wait(x) returns, so it cannot have finished then: a
// wait(x) that waited for it would never return (it gives up after
// `generous`, and the test fails). A sequential pool runs tasks in program
// order, so there wait(x) runs every task before x's last one; a task
// emplaced after that must not run.
TEST_P(flow_test, wait_for_an_object_does_not_wait_for_unrelated_tasks) {
  weft::pool other{{.threads = 1}};
  weft::pool pool{options()};
  std::atomic<bool> release{false};
  auto gate = other.submit([&release] { return await_flag(release); });
  weft::flow f{pool};
  std::uint64_t x = 1;
  std::uint64_t y = 0;
  std::atomic<bool> unrelated_done{false};
  std::atomic<int> wrong{0};
  auto emplace_unrelated = [&] {
    if (sequential()) {
      // Not held back: on a sequential pool it runs when something runs it.
      f.emplace(
          [&unrelated_done](std::uint64_t& v) {
            v = 7;
            unrelated_done = true;
          },
          weft::write(y));
    } else {
      f.emplace(
          [&unrelated_done](std::uint64_t& v) {
            v = 7;
            unrelated_done = true;
          },
          weft::write(y), weft::after(gate));
    }
  };
  if (!sequential()) emplace_unrelated();
  const std::uint64_t expected = emplace_tasks_on(f, x, wrong);  // ends with a reduce run
  if (sequential()) emplace_unrelated();
  f.wait(x);
  EXPECT_EQ(x, expected);
  EXPECT_FALSE(unrelated_done.load()) << "wait(x) ran or waited for a task that does not access x";
  // Again, with more tasks on x and the unrelated one still held back.
  const std::uint64_t expected2 = emplace_tasks_on(f, x, wrong);
  f.wait(x);
  EXPECT_EQ(x, expected2);
  if (!sequential()) {
    EXPECT_FALSE(unrelated_done.load()) << "wait(x) waited for a task that does not access x";
  }
  // Open runs of commute and of concurrent tasks: wait(x) waits for all of
  // their members.
  for (int i = 0; i < 20; ++i) {
    f.emplace(
        [](std::uint64_t& v) {
          spin_a_little();
          v += 1;
        },
        weft::commute(x));
  }
  f.wait(x);
  EXPECT_EQ(x, expected2 + 20);
  for (int i = 0; i < 20; ++i) {
    f.emplace(
        [](std::uint64_t& v) {
          spin_a_little();
          weft::test::atomic_add(v, 1);
        },
        weft::concurrent(x));
  }
  f.wait(x);
  EXPECT_EQ(x, expected2 + 40);
  int never_accessed = 0;
  f.wait(never_accessed);  // nothing to wait for
  release = true;
  EXPECT_TRUE(gate.get());
  f.wait();
  EXPECT_TRUE(unrelated_done.load());
  EXPECT_EQ(y, 7U);
  EXPECT_EQ(wrong.load(), 0);
}

// The literal version: the unrelated task blocks a worker until a flag is
// set after wait(x) returns; the other workers run x's tasks.
TEST_P(flow_test, wait_for_an_object_while_an_unrelated_task_blocks_a_worker) {
  if (GetParam() < 2) GTEST_SKIP() << "one worker is blocked: x's tasks need another";
  weft::pool pool{options()};
  weft::flow f{pool};
  std::uint64_t x = 1;
  std::uint64_t y = 0;
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  std::atomic<bool> unrelated_done{false};
  std::atomic<int> wrong{0};
  f.emplace(
      [&](std::uint64_t& v) {
        started = true;
        await_flag(release);
        v = 7;
        unrelated_done = true;
      },
      weft::write(y));
  ASSERT_TRUE(await_flag(started));
  const std::uint64_t expected = emplace_tasks_on(f, x, wrong);
  f.wait(x);
  EXPECT_EQ(x, expected);
  EXPECT_FALSE(unrelated_done.load()) << "wait(x) waited for a task that does not access x";
  release = true;
  f.wait();
  EXPECT_TRUE(unrelated_done.load());
  EXPECT_EQ(wrong.load(), 0);
}

// An unrelated task that throws does not make wait(x) throw; wait() does.
TEST_P(flow_test, wait_for_an_object_does_not_rethrow) {
  weft::pool pool{options()};
  weft::flow f{pool};
  std::uint64_t x = 1;
  std::uint64_t y = 0;
  std::atomic<int> wrong{0};
  const std::uint64_t expected = emplace_tasks_on(f, x, wrong);
  // After x's last task (so x's tasks are not skipped), but not on x.
  auto last = f.emplace([](const std::uint64_t&) {}, weft::read(x));
  f.emplace([](std::uint64_t&) { throw std::runtime_error("unrelated"); }, weft::write(y),
            weft::after(last));
  EXPECT_NO_THROW(f.wait(x));
  EXPECT_EQ(x, expected);
  EXPECT_THROW(f.wait(), std::runtime_error);
  EXPECT_EQ(wrong.load(), 0);
}

// wait(x) from a job of the flow's own pool, while another task of the
// flow blocks until wait(x) has returned. In a child process: when wait(x)
// needs the blocked task, or a queue only the waiting worker serves, it
// never returns.
TEST_P(flow_test, wait_for_an_object_inside_a_pool_job) {
  const std::size_t workers = GetParam();
  const auto scenario = [workers]() -> int {
    weft::pool pool{{.threads = workers}};
    std::atomic<bool> release{false};
    std::atomic<bool> unrelated_done{false};
    std::atomic<int> wrong{0};
    std::uint64_t x = 1;
    std::uint64_t y = 0;
    std::uint64_t expected = 0;
    bool x_final = false;
    bool unrelated_pending = false;
    pool.submit([&] {
          weft::flow f{pool};
          auto emplace_unrelated = [&] {
            f.emplace(
                [&](std::uint64_t& v) {
                  await_flag(release);
                  v = 7;
                  unrelated_done = true;
                },
                weft::write(y));
          };
          if (workers != 0) emplace_unrelated();
          expected = emplace_tasks_on(f, x, wrong);
          if (workers == 0) emplace_unrelated();
          std::fprintf(stderr, "child: job calls wait(x)\n");
          f.wait(x);
          std::fprintf(stderr, "child: wait(x) returned\n");
          x_final = x == expected;
          unrelated_pending = !unrelated_done.load();
          release = true;
          f.wait();
        })
        .get();
    if (!x_final) return child_failure("x is final after wait(x)");
    if (!unrelated_pending) return child_failure("the unrelated task had not finished");
    if (!unrelated_done.load() || y != 7) return child_failure("the unrelated task ran");
    if (wrong.load() != 0) return child_failure("the readers saw the written values");
    return 0;
  };
  if (fork_aborts()) {
    GTEST_SKIP() << "fork() of a multi-threaded process aborts under " << weft::test::emulator();
  }
  EXPECT_TRUE(finishes_in_child(scenario));
}

// wait(x) in a job, where x's task waits for a future whose job is queued
// behind the waiting job: with one worker, only the waiting worker can run
// that job. In a child process, since it hangs if the wait does not run it.
TEST_P(flow_test, wait_for_an_object_inside_a_pool_job_after_a_future_of_the_pool) {
  const std::size_t workers = GetParam();
  const auto scenario = [workers]() -> int {
    weft::pool pool{{.threads = workers}};
    int x = 0;
    const bool ok = pool.submit([&] {
                          weft::flow f{pool};
                          auto fut = pool.submit([] { return 5; });
                          f.emplace([](int& v) { v = 5; }, weft::write(x), weft::after(fut));
                          std::fprintf(stderr, "child: job calls wait(x)\n");
                          f.wait(x);
                          std::fprintf(stderr, "child: wait(x) returned\n");
                          const bool final_value = x == 5;
                          f.wait();
                          return final_value && fut.get() == 5;
                        })
                        .get();
    return ok ? 0 : child_failure("x is final after wait(x)");
  };
  if (fork_aborts()) {
    GTEST_SKIP() << "fork() of a multi-threaded process aborts under " << weft::test::emulator();
  }
  EXPECT_TRUE(finishes_in_child(scenario));
}

// ---------------------------------------------------------------------------
// after()

TEST_P(flow_test, after_a_future_of_the_same_pool) {
  weft::pool pool{options()};
  weft::flow f{pool};
  std::atomic<bool> release{false};
  int produced = 0;
  // The job cannot finish before `release` (on a sequential pool it runs
  // when the flow waits for it).
  auto fut = pool.submit([&] {
    await_flag(release);
    produced = 42;
    return 1;
  });
  int seen = 0;
  std::atomic<bool> ran{false};
  f.emplace(
      [&](int& s) {
        s = produced;
        ran = true;
      },
      weft::write(seen), weft::after(fut));
  EXPECT_FALSE(ran.load());
  release = true;
  f.wait();
  EXPECT_TRUE(ran.load());
  EXPECT_EQ(seen, 42);
  EXPECT_EQ(fut.get(), 1);
}

TEST_P(flow_test, after_a_future_of_another_pool) {
  weft::pool other{{.threads = 2}};
  weft::pool pool{options()};
  weft::flow f{pool};
  std::atomic<bool> release{false};
  std::string produced;
  auto fut = other.submit([&] {
    await_flag(release);
    produced = "from the other pool";
  });
  std::string seen;
  std::atomic<bool> ran{false};
  f.emplace(
      [&](std::string& s) {
        s = produced;
        ran = true;
      },
      weft::write(seen), weft::after(fut));
  std::this_thread::sleep_for(2ms);  // time for a task without the edge to run
  EXPECT_FALSE(ran.load());
  release = true;
  f.wait();
  EXPECT_EQ(seen, "from the other pool");
  // A future that is ready already adds no wait.
  f.emplace([&](std::string& s) { s += "!"; }, weft::write(seen), weft::after(fut));
  f.wait();
  EXPECT_EQ(seen, "from the other pool!");
  fut.get();
}

TEST_P(flow_test, after_two_futures) {
  weft::pool other{{.threads = 2}};
  weft::pool pool{options()};
  weft::flow f{pool};
  std::atomic<bool> release_a{false};
  std::atomic<bool> release_b{false};
  std::atomic<bool> a_done{false};
  std::atomic<bool> b_done{false};
  auto a = other.submit([&] {
    await_flag(release_a);
    a_done = true;
  });
  auto b = other.submit([&] {
    await_flag(release_b);
    b_done = true;
  });
  std::atomic<bool> ran{false};
  std::atomic<bool> saw_both{false};
  for (int i = 0; i < 3; ++i) {
    f.emplace(
        [&] {
          saw_both = a_done.load() && b_done.load();
          ran = true;
        },
        weft::after(a), weft::after(b));
  }
  release_a = true;
  if (!sequential()) {
    ASSERT_TRUE(await_flag(a_done));
    std::this_thread::sleep_for(2ms);  // time for a task that missed b's edge to run
    EXPECT_FALSE(ran.load());
  }
  release_b = true;
  f.wait();
  EXPECT_TRUE(ran.load());
  EXPECT_TRUE(saw_both.load());
  a.get();
  b.get();
}

// The edge only orders: the future's exception is neither looked at nor
// passed on, and the task runs.
TEST_P(flow_test, after_a_failed_future_still_runs) {
  weft::pool pool{options()};
  weft::flow f{pool};
  auto fut = pool.submit([]() -> int { throw std::runtime_error("job failed"); });
  std::atomic<bool> ran{false};
  f.emplace([&ran] { ran = true; }, weft::after(fut));
  EXPECT_NO_THROW(f.wait());
  EXPECT_TRUE(ran.load());
  EXPECT_THROW(fut.get(), std::runtime_error);
}

TEST_P(flow_test, after_a_graph_run) {
  weft::pool pool{options()};
  weft::graph g;
  std::atomic<bool> release{false};
  int produced = 0;
  auto first = g.emplace([&] { await_flag(release); });
  auto second = g.emplace([&] { produced += 7; });
  first.precede(second);
  weft::flow f{pool};
  int seen = 0;
  for (int r = 0; r < 3; ++r) {
    release = false;
    auto run = pool.run(g);
    f.emplace([&](int& s) { s = produced; }, weft::write(seen), weft::after(run));
    release = true;
    f.wait();
    EXPECT_EQ(seen, 7 * (r + 1));
    run.get();
  }
}

TEST_P(flow_test, after_a_flow_task) {
  weft::pool pool{options()};
  weft::flow f{pool};
  std::atomic<bool> release{false};
  std::atomic<bool> first_done{false};
  std::atomic<bool> in_order{false};
  std::atomic<int> chain{0};
  auto first = f.emplace([&] {
    await_flag(release);
    first_done = true;
  });
  auto second = f.emplace([&] { in_order = first_done.load(); }, weft::after(first));
  // A chain through after() alone, also naming tasks on the way.
  auto prev = second.name("second");
  for (int i = 0; i < 50; ++i) {
    prev = f.emplace(
        [&chain, i] {
          if (chain.load() == i) chain.fetch_add(1);
        },
        weft::after(prev));
  }
  std::this_thread::sleep_for(2ms);  // time for a task without the edge to run
  release = true;
  f.wait();
  EXPECT_TRUE(in_order.load());
  EXPECT_EQ(chain.load(), 50);
  // Handles of finished tasks stay usable (their nodes may run other tasks
  // by now): after() then adds no edge.
  std::atomic<int> ran{0};
  for (int i = 0; i < 200; ++i) f.emplace([&ran] { ran.fetch_add(1); }, weft::after(first));
  f.wait();
  EXPECT_EQ(ran.load(), 200);
  EXPECT_FALSE(first.empty());
}

TEST_P(flow_test, a_future_may_go_once_emplace_has_returned) {
  // The header asks the future to stay valid during emplace only. Here it
  // is read (which frees its state) before the flow runs the task; a job
  // submitted afterwards may get the freed state's memory, and a flow that
  // still looked at the old state would wait for that job (which gives up
  // after a while and reports it).
  weft::pool other{{.threads = 1}};
  weft::pool pool{options()};
  weft::flow f{pool};
  std::atomic<bool> release{false};
  auto job = [&release](bool block) { return !block || await_flag(release, 3s); };
  auto fut = other.submit([&job] { return job(false); });
  std::atomic<bool> ran{false};
  f.emplace([&ran] { ran = true; }, weft::after(fut));
  EXPECT_TRUE(fut.get());
  auto later = other.submit([&job] { return job(true); });
  f.wait();
  release = true;
  EXPECT_TRUE(ran.load());
  EXPECT_TRUE(later.get()) << "the flow waited for a job submitted after the future was read";
}

TEST_P(flow_test, after_rejects_empty_handles) {
  weft::pool pool{options()};
  weft::flow f{pool};
  weft::future<int> empty_future;
  EXPECT_THROW((void)weft::after(empty_future), weft::usage_error);
  EXPECT_THROW((void)weft::after(weft::flow_task{}), weft::usage_error);
  EXPECT_THROW((void)weft::flow_task{}.name("x"), weft::usage_error);
  EXPECT_TRUE(weft::flow_task{}.empty());
  auto fut = pool.submit([] { return 1; });
  EXPECT_EQ(fut.get(), 1);
  EXPECT_THROW((void)weft::after(fut), weft::usage_error);  // read by get()
  f.wait();
}

// after(t) with t of another flow throws usage_error; the flow stays
// usable, and the rejected callable is destroyed. In a child process: a
// flow that counted the rejected task never finishes waiting.
TEST_P(flow_test, after_a_task_of_another_flow_is_rejected) {
  const std::size_t workers = GetParam();
  const auto scenario = [workers]() -> int {
    weft::pool pool{{.threads = workers}};
    auto token = std::make_shared<int>(0);
    std::uint64_t x = 0;
    {
      weft::flow f{pool};
      weft::flow g{pool};
      auto foreign = g.emplace([] {});
      bool rejected = false;
      try {
        f.emplace([token](std::uint64_t& v) { v = 99; }, weft::write(x), weft::after(foreign));
      } catch (const weft::usage_error&) {
        rejected = true;
      }
      if (!rejected) return child_failure("after(task of another flow) throws usage_error");
      g.wait();
      std::fprintf(stderr, "child: emplace threw usage_error; the flow goes on\n");
      f.emplace([](std::uint64_t& v) { v += 1; }, weft::write(x));
      std::fprintf(stderr, "child: calling wait()\n");
      f.wait();
      std::fprintf(stderr, "child: wait() returned\n");
      if (x != 1) return child_failure("the next task on x ran, the rejected one did not");
    }
    if (token.use_count() != 1) return child_failure("the rejected task's callable was destroyed");
    return 0;
  };
  if (fork_aborts()) {
    GTEST_SKIP() << "fork() of a multi-threaded process aborts under " << weft::test::emulator();
  }
  EXPECT_TRUE(finishes_in_child(scenario, 5));
}

// ---------------------------------------------------------------------------
// Nested flows

// A flow whose tasks each open a child flow on the same pool, down to
// `depth` 10: 2^10 flows at the bottom level, each waited for by a task.
std::uint64_t nested(weft::pool& pool, int depth) {
  weft::flow f{pool};
  auto a = static_cast<std::uint64_t>(depth);
  std::uint64_t b = 0;
  std::uint64_t c = 0;
  f.emplace([](std::uint64_t& v) { v = v * 10 + 1; }, weft::write(a));
  f.emplace(
      [&pool, depth](const std::uint64_t& av, std::uint64_t& bv) {
        bv = av + (depth < 10 ? nested(pool, depth + 1) : 0);
      },
      weft::read(a), weft::write(b));
  f.emplace(
      [&pool, depth](const std::uint64_t& av, std::uint64_t& cv) {
        cv = av * 2 + (depth < 10 ? nested(pool, depth + 1) : 0);
      },
      weft::read(a), weft::write(c));
  f.emplace([](const std::uint64_t& bv, std::uint64_t& cv) { cv += bv; }, weft::read(b),
            weft::write(c));
  f.wait();
  return c;
}

std::uint64_t nested_model(int depth) {
  const std::uint64_t a = static_cast<std::uint64_t>(depth) * 10 + 1;
  const std::uint64_t below = depth < 10 ? nested_model(depth + 1) : 0;
  return (a + below) + (a * 2 + below);
}

TEST_P(flow_test, nested_flows_ten_deep) {
  weft::pool pool{options()};
  EXPECT_EQ(nested(pool, 1), nested_model(1));
  // Also from a job of the pool.
  EXPECT_EQ(pool.submit([&pool] { return nested(pool, 1); }).get(), nested_model(1));
}

// ---------------------------------------------------------------------------
// Exceptions

TEST_P(flow_test, an_exception_skips_later_tasks_and_is_rethrown_by_wait) {
  weft::pool pool{options()};
  weft::flow f{pool};
  std::uint64_t x = 0;
  std::atomic<int> ran_after{0};
  f.emplace([](std::uint64_t& v) { v = 1; }, weft::write(x));
  f.emplace(
      [](std::uint64_t& v) {
        v = 2;
        throw std::runtime_error("first");
      },
      weft::write(x));
  for (int i = 0; i < 20; ++i) {
    f.emplace(
        [&ran_after](std::uint64_t& v) {
          v = 100;
          ran_after.fetch_add(1);
        },
        weft::write(x));
  }
  f.emplace([](const std::uint64_t&) { throw std::runtime_error("second"); }, weft::read(x));
  try {
    f.wait();
    ADD_FAILURE() << "wait() did not rethrow";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "first");
  }
  EXPECT_EQ(ran_after.load(), 0);
  EXPECT_EQ(x, 2U);
  // The flow is usable again, with nothing left of the failure...
  f.emplace([](std::uint64_t& v) { v += 1; }, weft::write(x));
  EXPECT_NO_THROW(f.wait());
  EXPECT_EQ(x, 3U);
  // ...and reports the next one, of any type.
  f.emplace([] { throw 7; });
  try {
    f.wait();
    ADD_FAILURE() << "wait() did not rethrow";
  } catch (int v) {
    EXPECT_EQ(v, 7);
  }
  EXPECT_NO_THROW(f.wait());
}

// Many tasks throw: wait() rethrows one of them (on a sequential pool the
// first in program order, which skips all the others), and the next
// wait() has nothing left to throw.
TEST_P(flow_test, one_of_many_exceptions_is_rethrown) {
  weft::pool pool{options()};
  weft::flow f{pool};
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) {
    f.emplace([&ran, i] {
      ran.fetch_add(1);
      throw i;
    });
  }
  try {
    f.wait();
    ADD_FAILURE() << "wait() did not rethrow";
  } catch (int i) {
    EXPECT_GE(i, 0);
    EXPECT_LT(i, 50);
    if (sequential()) {
      EXPECT_EQ(i, 0);
      EXPECT_EQ(ran.load(), 1);
    }
  }
  EXPECT_NO_THROW(f.wait());
}

TEST_P(flow_test, an_exception_nobody_waited_for_goes_to_on_error) {
  std::mutex mutex;
  std::vector<std::string> errors;
  weft::pool_options o = options();
  o.on_error = [&](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      const std::lock_guard lock{mutex};
      errors.emplace_back(x.what());
    }
  };
  weft::pool pool{o};
  std::uint64_t x = 0;
  {
    weft::flow f{pool};
    f.emplace([](std::uint64_t&) { throw std::logic_error("left behind"); }, weft::write(x));
    f.emplace([](std::uint64_t& v) { v = 1; }, weft::write(x));  // skipped
  }
  EXPECT_EQ(x, 0U);
  {
    const std::lock_guard lock{mutex};
    ASSERT_EQ(errors.size(), 1U);
    EXPECT_EQ(errors[0], "left behind");
  }
  // One that wait() rethrew, or a cancel, is not reported again.
  {
    weft::flow f{pool};
    f.emplace([] { throw std::logic_error("seen"); });
    EXPECT_THROW(f.wait(), std::logic_error);
    f.emplace([] {});
    f.cancel();
  }
  const std::lock_guard lock{mutex};
  EXPECT_EQ(errors.size(), 1U);
}

TEST_P(flow_test, an_exception_nobody_waited_for_reaches_pool_wait) {
  weft::pool pool{options()};
  {
    weft::flow f{pool};
    f.emplace([] { throw std::domain_error("for pool::wait"); });
  }
  EXPECT_THROW(pool.wait(), std::domain_error);
  EXPECT_NO_THROW(pool.wait());
}

// ---------------------------------------------------------------------------
// cancel()

TEST_P(flow_test, cancel_skips_the_tasks_that_have_not_started) {
  weft::pool pool{options()};
  weft::flow f{pool};
  std::uint64_t x = 0;
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  std::atomic<int> later{0};
  f.emplace(
      [&](std::uint64_t& v) {
        started = true;
        await_flag(release);
        v = 1;
      },
      weft::write(x));
  for (int i = 0; i < 20; ++i) {
    f.emplace(
        [&later](std::uint64_t& v) {
          v += 10;
          later.fetch_add(1);
        },
        weft::write(x));
  }
  if (!sequential()) {
    ASSERT_TRUE(await_flag(started));
  }
  EXPECT_TRUE(f.cancel());
  release = true;
  EXPECT_THROW(f.wait(), weft::run_cancelled);
  EXPECT_EQ(later.load(), 0);
  EXPECT_EQ(x, sequential() ? 0U : 1U);  // the running task finishes
  // Usable again, not cancelled any more.
  f.emplace([](std::uint64_t& v) { v += 100; }, weft::write(x));
  EXPECT_NO_THROW(f.wait());
  EXPECT_EQ(x, sequential() ? 100U : 101U);
}

TEST_P(flow_test, cancel_from_inside_a_task) {
  weft::pool pool{options()};
  weft::flow f{pool};
  std::uint64_t x = 0;
  std::atomic<int> cancelled{-1};
  f.emplace(
      [&](std::uint64_t& v) {
        v = 1;
        cancelled = f.cancel() ? 1 : 0;  // this task is unfinished: true
      },
      weft::write(x));
  for (int i = 0; i < 20; ++i) f.emplace([](std::uint64_t& v) { v += 1; }, weft::write(x));
  EXPECT_THROW(f.wait(), weft::run_cancelled);
  EXPECT_EQ(cancelled.load(), 1);
  EXPECT_EQ(x, 1U);
}

// cancel() returns false when nothing is unfinished: it has nothing to
// skip, and the tasks emplaced afterwards run as usual.
TEST_P(flow_test, cancel_of_an_idle_flow_changes_nothing) {
  weft::pool pool{options()};
  weft::flow f{pool};
  EXPECT_FALSE(f.cancel());
  std::atomic<int> ran{0};
  f.emplace([&ran] { ran.fetch_add(1); });
  EXPECT_NO_THROW(f.wait()) << "a cancel() that returned false cancelled later tasks";
  EXPECT_EQ(ran.load(), 1);
  EXPECT_FALSE(f.cancel());  // after a wait(): idle again
  f.emplace([&ran] { ran.fetch_add(1); });
  EXPECT_NO_THROW(f.wait()) << "a cancel() that returned false cancelled later tasks";
  EXPECT_EQ(ran.load(), 2);
}

// ---------------------------------------------------------------------------
// The window, callables, moves

TEST_P(flow_test, the_window_bounds_the_unfinished_tasks) {
  weft::pool pool{options()};
  constexpr std::size_t window = 8;
  auto run = [&pool] {
    weft::flow f{pool, {.window = window}};
    std::atomic<std::size_t> done{0};
    std::size_t most = 0;
    std::uint64_t x = 0;
    for (std::size_t i = 0; i < 400; ++i) {
      if (i % 2 == 0) {
        f.emplace([&done] {
          spin_a_little();
          done.fetch_add(1);
        });
      } else {
        f.emplace(
            [&done](std::uint64_t& v) {
              v += 1;
              done.fetch_add(1);
            },
            weft::write(x));
      }
      // Tasks not done are unfinished, so at most `window` of them.
      most = std::max(most, i + 1 - done.load());
    }
    f.wait();
    return std::pair{most, x};
  };
  const auto [most, x] = run();
  EXPECT_LE(most, window);
  EXPECT_EQ(x, 200U);
  // A producer on a worker runs tasks while it waits for the window.
  const auto [most_in_job, x_in_job] = pool.submit(run).get();
  EXPECT_LE(most_in_job, window);
  EXPECT_EQ(x_in_job, 200U);
}

TEST_P(flow_test, callables_are_destroyed_once_run_or_skipped) {
  weft::pool pool{options()};
  weft::flow f{pool};
  auto token = std::make_shared<int>(0);
  std::array<std::uint64_t, 40> big{};  // a callable too big to be stored inline
  big.fill(1);
  std::uint64_t sum = 0;
  for (int i = 0; i < 20; ++i) f.emplace([token] {});
  for (int i = 0; i < 20; ++i) {
    f.emplace([token, big](std::uint64_t& s) { s += big[5]; }, weft::write(sum));
  }
  f.wait();
  EXPECT_EQ(sum, 20U);
  EXPECT_EQ(token.use_count(), 1);
  // Skipped after an exception.
  f.emplace([](std::uint64_t&) { throw std::runtime_error("stop"); }, weft::write(sum));
  for (int i = 0; i < 20; ++i) {
    f.emplace([token, big](std::uint64_t& s) { s += big[5]; }, weft::write(sum));
  }
  EXPECT_THROW(f.wait(), std::runtime_error);
  EXPECT_EQ(sum, 20U);
  EXPECT_EQ(token.use_count(), 1);
}

TEST_P(flow_test, a_moved_flow_goes_on_and_the_old_one_refuses) {
  weft::pool pool{options()};
  weft::flow f{pool};
  std::uint64_t x = 0;
  f.emplace([](std::uint64_t& v) { v = 1; }, weft::write(x));
  weft::flow g{std::move(f)};
  EXPECT_EQ(&g.owner(), &pool);
  // NOLINTBEGIN(bugprone-use-after-move)
  EXPECT_THROW((void)f.emplace([] {}), weft::usage_error);
  EXPECT_THROW(f.wait(), weft::usage_error);
  EXPECT_FALSE(f.cancel());
  // NOLINTEND(bugprone-use-after-move)
  g.emplace([](std::uint64_t& v) { v += 1; }, weft::write(x));
  g.wait();
  EXPECT_EQ(x, 2U);
}

// A flow on one pool, produced from a job of another: its waits help the
// other pool (or run the tasks, for a sequential flow pool) meanwhile.
TEST_P(flow_test, a_flow_produced_from_a_job_of_another_pool) {
  weft::pool pool{options()};
  weft::pool driver{{.threads = 2}};
  std::uint64_t x = 1;
  std::uint64_t sum = 0;
  std::atomic<int> wrong{0};
  auto produce = [&] {
    weft::flow f{pool, {.window = 16}};
    const std::uint64_t e = emplace_tasks_on(f, x, wrong);
    f.wait(x);
    if (x != e) wrong.fetch_add(1);
    for (std::uint64_t i = 1; i <= 100; ++i) {
      f.emplace([i](std::uint64_t& c) { c += i; }, weft::reduce(sum, std::plus<>{}));
    }
    f.wait();
    return e;
  };
  const std::uint64_t expected = driver.submit(produce).get();
  EXPECT_EQ(x, expected);
  EXPECT_EQ(sum, 5050U);
  EXPECT_EQ(wrong.load(), 0);
}

// emplace throws before the task is known to the flow: the flow carries on
// as if it had not been called.
TEST_P(flow_test, a_rejected_emplace_leaves_the_flow_as_it_was) {
  struct throws_when_stored {
    throws_when_stored() = default;
    throws_when_stored(const throws_when_stored&) { throw std::runtime_error("no copy"); }
    throws_when_stored& operator=(const throws_when_stored&) = delete;
    ~throws_when_stored() = default;
    void operator()(std::uint64_t& v) const { v = 1000; }
  };
  weft::pool pool{options()};
  weft::flow f{pool};
  std::uint64_t x = 0;
  auto token = std::make_shared<int>(0);
  f.emplace([](std::uint64_t& v) { v = 1; }, weft::write(x));
  const throws_when_stored bad;
  EXPECT_THROW((void)f.emplace(bad, weft::write(x)), std::runtime_error);
  // An object declared with reduce and again in the same task.
  EXPECT_THROW((void)f.emplace([token](std::uint64_t&, const std::uint64_t&) {},
                               weft::reduce(x, std::plus<>{}), weft::read(x)),
               weft::usage_error);
  f.emplace([](std::uint64_t& v) { v += 1; }, weft::write(x));
  EXPECT_NO_THROW(f.wait());
  EXPECT_EQ(x, 2U);
  EXPECT_EQ(token.use_count(), 1);
}

// ---------------------------------------------------------------------------
// One producer

// A callable whose stored copy (made inside emplace, after emplace has
// claimed the flow) says so and then waits for `go`: the emplacing thread
// is then certainly inside emplace.
struct stalls_when_stored {
  std::atomic<bool>* inside;
  std::atomic<bool>* go;
  std::atomic<int>* runs;

  stalls_when_stored(std::atomic<bool>* i, std::atomic<bool>* g, std::atomic<int>* r)
      : inside(i), go(g), runs(r) {}
  stalls_when_stored(const stalls_when_stored& o) : inside(o.inside), go(o.go), runs(o.runs) {
    if (!inside->exchange(true)) await_flag(*go);
  }
  stalls_when_stored& operator=(const stalls_when_stored&) = delete;
  ~stalls_when_stored() = default;
  void operator()() const { runs->fetch_add(1); }
};

TEST_P(flow_test, a_second_thread_emplacing_at_once_gets_usage_error) {
  weft::pool pool{options()};
  weft::flow f{pool};
  std::atomic<bool> inside{false};
  std::atomic<bool> go{false};
  std::atomic<int> runs{0};
  std::uint64_t x = 0;
  std::thread producer([&] {
    const stalls_when_stored task{&inside, &go, &runs};
    f.emplace(task);
    f.wait();
  });
  ASSERT_TRUE(await_flag(inside));
  EXPECT_THROW((void)f.emplace([] {}), weft::usage_error);
  EXPECT_THROW(f.wait(), weft::usage_error);
  EXPECT_THROW(f.wait(x), weft::usage_error);
  go = true;
  producer.join();
  EXPECT_EQ(runs.load(), 1);
  // The flow is fine afterwards, from this thread.
  f.emplace([](std::uint64_t& v) { v = 5; }, weft::write(x));
  f.wait();
  EXPECT_EQ(x, 5U);
}

TEST_P(flow_test, a_task_emplacing_into_its_own_flow_gets_usage_error) {
  weft::pool pool{options()};
  weft::flow f{pool};
  std::atomic<int> rejected{0};
  std::uint64_t y = 0;
  auto try_to_produce = [&] {
    try {
      f.emplace([] {});
    } catch (const weft::usage_error&) {
      rejected.fetch_add(1);
    }
    try {
      f.wait(y);
    } catch (const weft::usage_error&) {
      rejected.fetch_add(1);
    }
  };
  if (sequential()) {
    // The task runs inside wait(), which holds the flow.
    f.emplace(try_to_produce);
    f.wait();
  } else {
    // The task tries while the producer is stalled inside emplace.
    std::atomic<bool> inside{false};
    std::atomic<bool> tried{false};
    std::atomic<int> runs{0};
    f.emplace([&] {
      await_flag(inside);
      try_to_produce();
      tried = true;
    });
    const stalls_when_stored stall{&inside, &tried, &runs};
    f.emplace(stall);
    f.wait();
    EXPECT_EQ(runs.load(), 1);
  }
  EXPECT_EQ(rejected.load(), 2);
}

// ---------------------------------------------------------------------------
// dump()

TEST_P(flow_test, dump_writes_dot_that_graphviz_parses) {
  weft::pool pool{options()};
  weft::flow f{pool, {.keep_graph = true}};
  std::uint64_t x = 0;
  std::uint64_t z = 0;
  f.emplace([](std::uint64_t& v) { v = 1; }, weft::write(z)).name("zed");
  f.wait(z);
  // Everything below waits for the first task, which waits for `release`
  // (on a sequential pool nothing runs before wait()): no edge is dropped
  // for a finished predecessor.
  std::atomic<bool> release{false};
  f.emplace(
       [&release](std::uint64_t& v) {
         await_flag(release);
         v = 1;
       },
       weft::write(x))
      .name("load \"x\"");
  auto r1 = f.emplace([](const std::uint64_t&) {}, weft::read(x)).name("r1");
  f.emplace([](const std::uint64_t&) {}, weft::read(x));
  f.emplace([](std::uint64_t& v) { v += 1; }, weft::commute(x));
  f.emplace([](std::uint64_t& v) { v += 1; }, weft::commute(x));
  f.emplace([](std::uint64_t& v) { weft::test::atomic_add(v, 1); }, weft::concurrent(x));
  f.emplace([](std::uint64_t& c) { c += 1; }, weft::reduce(x, std::plus<>{}));
  f.emplace([](std::uint64_t& c) { c += 1; }, weft::reduce(x, std::plus<>{}));
  f.emplace([](std::uint64_t& v) { v *= 2; }, weft::write(x)).name("last");
  f.emplace([] {}, weft::after(r1)).name("after r1");
  std::ostringstream out;
  f.dump(out);
  const std::string dot = out.str();
  EXPECT_NE(dot.find("digraph"), std::string::npos) << dot;
  EXPECT_NE(dot.find("load \\\"x\\\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("\"zed\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("\"after r1\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("combine"), std::string::npos) << dot;
  if (!sequential()) {
    EXPECT_NE(dot.find("wait"), std::string::npos) << dot;
  }
  for (const char* mode :
       {" read\"]", " write\"]", " commute\"]", " concurrent\"]", " reduce\"]", "\"after\"]"}) {
    EXPECT_NE(dot.find(mode), std::string::npos) << "no edge labelled " << mode << "\n" << dot;
  }
  release = true;
  f.wait();
  EXPECT_EQ(x, 12U);  // (1 + 2 commute + 1 concurrent + 2 reduced) * 2
  std::ostringstream after_wait;
  f.dump(after_wait);
  EXPECT_EQ(after_wait.str().find("->"), std::string::npos) << after_wait.str();

  if (std::system("command -v dot > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "GraphViz's dot is not installed (scripts/deps.sh installs graphviz)";
  }
  const std::string path =
      ::testing::TempDir() + "weft_flow_dump_" + std::to_string(GetParam()) + ".dot";
  {
    std::ofstream file(path);
    file << dot;
  }
  const std::string command = "dot -Tcanon " + path + " > /dev/null";
  EXPECT_EQ(std::system(command.c_str()), 0) << dot;
  std::remove(path.c_str());
}

TEST_P(flow_test, dump_needs_keep_graph) {
  weft::pool pool{options()};
  weft::flow f{pool};
  f.emplace([] {});
  std::ostringstream out;
  EXPECT_THROW(f.dump(out), weft::usage_error);
  f.wait();
}

INSTANTIATE_TEST_SUITE_P(workers, flow_test, ::testing::ValuesIn(weft::test::worker_counts()),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

// ---------------------------------------------------------------------------
// Sequential pools

// Tasks of every mode (and none) run in program order on the waiting
// thread, with or without a window, and around wait(x).
TEST(flow_sequential, runs_tasks_in_program_order) {
  weft::pool pool{{.threads = 0}};
  for (const std::size_t window : {std::size_t{4096}, std::size_t{3}, std::size_t{0}}) {
    weft::flow f{pool, {.window = window}};
    std::vector<int> order;
    std::vector<std::thread::id> threads;
    std::array<std::uint64_t, 4> objects{};
    std::mt19937 rng(5);
    weft::flow_task previous;
    for (int i = 0; i < 300; ++i) {
      auto log = [&order, &threads, i] {
        order.push_back(i);
        threads.push_back(std::this_thread::get_id());
      };
      std::uint64_t& x = objects[rng() % objects.size()];
      switch (rng() % 8) {
        case 0:
          previous = f.emplace([log](const std::uint64_t&) { log(); }, weft::read(x));
          break;
        case 1:
          previous = f.emplace([log](std::uint64_t&) { log(); }, weft::write(x));
          break;
        case 2:
          previous = f.emplace([log](std::uint64_t&) { log(); }, weft::commute(x));
          break;
        case 3:
          previous = f.emplace([log](std::uint64_t&) { log(); }, weft::concurrent(x));
          break;
        case 4:
          previous = f.emplace([log](std::uint64_t&) { log(); }, weft::reduce(x, std::plus<>{}));
          break;
        case 5:
          previous = previous.empty() ? f.emplace(log) : f.emplace(log, weft::after(previous));
          break;
        case 6:
          previous = f.emplace(log);
          break;
        default:
          previous = f.emplace(log);
          f.wait(x);
          break;
      }
    }
    f.wait();
    std::vector<int> expected(300);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(order, expected) << "window " << window;
    for (const auto& id : threads) EXPECT_EQ(id, std::this_thread::get_id());
  }
}

}  // namespace
