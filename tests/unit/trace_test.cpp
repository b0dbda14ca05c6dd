// Tracing (docs/tracing.md): what a traced pool writes. The file's structure
// is checked by tests/trace/check_trace.py; these tests count what is in it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <weft/weft.hpp>

#include "support/support.hpp"

namespace {

// Unique per process (ctest runs the cases in parallel processes).
std::string temp_path(const std::string& stem) {
  static const unsigned tag = std::random_device{}();
  return ::testing::TempDir() + "weft_trace_" + stem + "_" + std::to_string(tag) + ".json";
}

// Sets (or, with nullptr, removes) an environment variable; Windows has
// _putenv_s, where an empty value removes it.
bool set_env(const char* name, const char* value) {
#ifdef _WIN32
  return _putenv_s(name, value == nullptr ? "" : value) == 0;
#else
  return (value == nullptr ? ::unsetenv(name) : ::setenv(name, value, 1)) == 0;
#endif
}

std::string read_file(const std::string& path) {
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

// The "dropped_records" figure of a trace.
std::size_t dropped(const std::string& text) {
  const std::string key = "\"dropped_records\":";
  const std::size_t at = text.find(key);
  if (at == std::string::npos) return static_cast<std::size_t>(-1);
  return std::stoull(text.substr(at + key.size()));
}

class trace_at : public ::testing::TestWithParam<std::size_t> {};

TEST_P(trace_at, every_job_has_one_slice_with_its_start_and_end) {
  const std::string path = temp_path("jobs");
  const std::size_t jobs = weft::test::scaled(20'000, 100);
  std::atomic<std::size_t> ran{0};
  {
    weft::pool pool{{.threads = GetParam(), .trace = path}};
    EXPECT_TRUE(pool.traced());
    for (std::size_t i = 0; i < jobs; ++i) {
      // Relaxed: only the total matters, read after wait().
      pool.spawn([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
    }
    pool.wait();
  }
  // Relaxed: the pool's destruction ordered every job before this.
  ASSERT_EQ(ran.load(std::memory_order_relaxed), jobs);
  const std::string text = read_file(path);
  // A slice is one record with both ends: a job that started and did not
  // end could not be in the file at all.
  EXPECT_EQ(count(text, "\"name\":\"job\""), jobs);
  EXPECT_EQ(dropped(text), 0U);
  std::remove(path.c_str());
}

TEST_P(trace_at, graph_and_flow_tasks_appear_with_their_names_and_edges) {
  const std::string path = temp_path("graph");
  constexpr int runs = 3;
  {
    weft::pool pool{{.threads = GetParam(), .trace = path}};
    weft::graph g;
    int a = 0;
    int b = 0;
    auto first = g.emplace([&] { a = 1; }).name("first task");
    auto second = g.emplace([&] { b = a + 1; }).name("second task");
    auto unnamed = g.emplace([] {});
    first.precede(second);
    second.precede(unnamed);
    for (int r = 0; r < runs; ++r) pool.run(g).get();
    EXPECT_EQ(b, 2);

    weft::flow f{pool};
    int x = 0;
    std::atomic<bool> named{false};
    // The first task waits until both are named: a name given after its
    // task finished is not in the trace.
    f.emplace(
         [&named](int& v) {
           // Acquire: pairs with the release store below.
           while (!named.load(std::memory_order_acquire)) std::this_thread::yield();
           v = 1;
         },
         weft::write(x))
        .name("flow first");
    f.emplace([](int& v) { v += 1; }, weft::write(x)).name("flow second");
    f.emplace([](int& v) { v += 1; }, weft::write(x));
    // Release: pairs with the acquire load in the first task.
    named.store(true, std::memory_order_release);
    f.wait();
    EXPECT_EQ(x, 3);
    pool.write_trace(path);
  }
  const std::string text = read_file(path);
  EXPECT_EQ(count(text, "\"name\":\"first task\""), static_cast<std::size_t>(runs));
  EXPECT_EQ(count(text, "\"name\":\"second task\""), static_cast<std::size_t>(runs));
  EXPECT_EQ(count(text, "\"name\":\"task #2\""), static_cast<std::size_t>(runs));
  EXPECT_EQ(count(text, "\"name\":\"flow first\""), 1U);
  EXPECT_EQ(count(text, "\"name\":\"flow second\""), 1U);
  EXPECT_EQ(count(text, "\"name\":\"flow task #"), 1U);
  // Each graph run has two edges that make a task ready, the flow two: an
  // arrow has a start and an end.
  const std::size_t arrows = count(text, "\"ph\":\"s\"");
  EXPECT_GE(arrows, static_cast<std::size_t>(2 * runs + 2));
  EXPECT_EQ(count(text, "\"ph\":\"f\""), arrows);
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(workers, trace_at, ::testing::Values(1, 2, 4, 8),
                         [](const auto& info) { return weft::test::workers_name(info.param); });

TEST(trace, a_full_ring_keeps_its_newest_records_and_counts_the_rest) {
  // 8 workers and up to 1,000,000 jobs into rings of 1,024 records: the
  // file holds at most a ring per thread, and says how many went.
  const std::string path = temp_path("ring");
  const std::size_t jobs = weft::test::scaled(1'000'000, 20'000);
  constexpr std::size_t records = 1024;
  constexpr std::size_t workers = 8;
  {
    weft::pool pool{{.threads = workers, .trace = path, .trace_records = records}};
    weft::task_group tg{pool};
    for (std::size_t i = 0; i < jobs; ++i) tg.spawn([] {});
    tg.wait();
  }
  const std::string text = read_file(path);
  const std::size_t kept = count(text, "\"ph\":\"X\"") + count(text, "\"ph\":\"i\"");
  // Workers' rings plus the thread that submitted (it may run none).
  EXPECT_LE(kept, (workers + 1) * records);
  EXPECT_GE(kept + dropped(text), jobs);
  EXPECT_GT(dropped(text), 0U);
  EXPECT_LT(text.size(), (workers + 1) * records * 200);
  std::remove(path.c_str());
}

TEST(trace, write_trace_reads_the_rings_while_they_are_written) {
  // Small rings that wrap many times while another thread copies them:
  // every copy is a well-formed file (torn records are dropped, never
  // written), and ThreadSanitizer sees no race.
  const std::string path = temp_path("racing");
  weft::pool pool{{.threads = 2, .trace = path, .trace_records = 64}};
  std::atomic<bool> stop{false};
  weft::task_group tg{pool};
  for (int w = 0; w < 2; ++w) {
    tg.spawn([&pool, &stop] {
      // Acquire: pairs with the release store below (only the stop matters).
      while (!stop.load(std::memory_order_acquire)) {
        weft::task_group inner{pool};
        for (int i = 0; i < 16; ++i) inner.spawn([] {});
        inner.wait();
      }
    });
  }
  for (std::size_t round = 0; round < weft::test::scaled(50, 5); ++round) {
    pool.write_trace(path);
    const std::string text = read_file(path);
    ASSERT_EQ(text.rfind("\n]}\n"), text.size() - 4) << "round " << round;
    EXPECT_LE(count(text, "\"ph\":\"X\"") + count(text, "\"ph\":\"i\""), 4U * 64U);
  }
  // Release: pairs with the acquire loads in the jobs.
  stop.store(true, std::memory_order_release);
  tg.wait();
  std::remove(path.c_str());
}

TEST(trace, idle_workers_record_their_sleep) {
  const std::string path = temp_path("sleep");
  {
    weft::pool pool{{.threads = 2, .trace = path}};
    pool.submit([] {}).get();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pool.submit([] {}).get();
  }
  // A park is recorded when the worker wakes (for a job, or at the end).
  const std::string text = read_file(path);
  EXPECT_GE(count(text, "\"name\":\"parked\""), 1U);
  EXPECT_EQ(count(text, "\"name\":\"thread_name\""), 2U);
  std::remove(path.c_str());
}

TEST(trace, a_sequential_pools_jobs_go_to_the_waiting_threads_track) {
  const std::string path = temp_path("sequential");
  {
    weft::pool pool{{.threads = 0, .trace = path}};
    int v = 0;
    pool.spawn([&v] { v = 1; });
    pool.wait();
    EXPECT_EQ(v, 1);
  }
  const std::string text = read_file(path);
  EXPECT_EQ(count(text, "\"name\":\"job\""), 1U);
  EXPECT_EQ(count(text, "(not a worker)"), 1U);
  std::remove(path.c_str());
}

TEST(trace, weft_trace_names_the_file_and_numbers_later_pools) {
  const std::string path = temp_path("env");
  const std::string second = path.substr(0, path.size() - 5) + ".1.json";
  ASSERT_TRUE(set_env("WEFT_TRACE", path.c_str()));
  {
    weft::pool a{{.threads = 1, .name = "first"}};
    weft::pool b{{.threads = 1, .name = "second"}};
    EXPECT_TRUE(a.traced());
    EXPECT_TRUE(b.traced());
    a.submit([] {}).get();
    b.submit([] {}).get();
  }
  set_env("WEFT_TRACE", nullptr);
  EXPECT_NE(read_file(path).find("\"pool\":\"first\""), std::string::npos);
  EXPECT_NE(read_file(second).find("\"pool\":\"second\""), std::string::npos);
  weft::pool untraced{{.threads = 1}};
  EXPECT_FALSE(untraced.traced());
  std::remove(path.c_str());
  std::remove(second.c_str());
}

TEST(trace, misuse_is_reported) {
  weft::pool untraced{{.threads = 1}};
  EXPECT_THROW(untraced.write_trace(temp_path("never")), weft::usage_error);
  EXPECT_THROW((weft::pool{{.threads = 1, .trace = temp_path("zero"), .trace_records = 0}}),
               weft::usage_error);
  const std::string path = temp_path("unwritable");
  {
    weft::pool pool{{.threads = 1, .trace = path}};
    EXPECT_THROW(pool.write_trace("/nonexistent-directory/trace.json"), std::system_error);
  }
  std::remove(path.c_str());
}

}  // namespace
