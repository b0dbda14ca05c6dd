// weft::coro in a traced pool (docs/tracing.md, docs/coroutines.md): every
// resumption that runs as a job is a slice named for what the coroutine
// waited for. Counted in the written file, as tests/unit/trace_test.cpp
// counts jobs.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <weft/weft.hpp>

namespace {

using namespace std::chrono_literals;

std::string slices_named(const std::string& name) { return "\"name\":\"" + name + "\""; }

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

weft::coro<int> value(int v) { co_return v; }
weft::coro<int> value_later(int v) {
  co_await weft::sleep_for(1ms);
  co_return v;
}

// On a pool of one worker that this coroutine occupies, nothing it awaits
// can finish before it suspends: every await below suspends, and resumes
// as a job.
weft::coro<int> every_kind(weft::pool& p, int rounds) {
  int sum = 0;
  weft::flow f{p};
  int x = 0;
  for (int i = 0; i < rounds; ++i) {
    sum += co_await p.submit([] { return 1; });
    co_await f.emplace([](int& v) { ++v; }, weft::write(x));
    co_await weft::sleep_for(1ms);
    // The first child suspends: the worker's loop takes the second from
    // the deque and runs it as a job.
    auto [a, b] = co_await weft::join(value_later(1), value(2));
    sum += a + b;
  }
  f.wait();
  co_return sum + x;
}

TEST(CoroTrace, EveryResumptionIsASliceNamedForWhatItAwaited) {
  static const unsigned tag = std::random_device{}();
  const std::string path =
      ::testing::TempDir() + "weft_trace_coro_" + std::to_string(tag) + ".json";
  constexpr int rounds = 3;
  {
    weft::pool p{{.threads = 1, .trace = path}};
    EXPECT_EQ(weft::sync_wait(p, every_kind(p, rounds)), rounds * 5);
  }
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  EXPECT_EQ(count(s, slices_named("coro start")), 1U);
  EXPECT_EQ(count(s, slices_named("coro after future")), static_cast<std::size_t>(rounds));
  EXPECT_EQ(count(s, slices_named("coro after flow")), static_cast<std::size_t>(rounds));
  EXPECT_EQ(count(s, slices_named("coro after sleep")), static_cast<std::size_t>(2 * rounds));
  // The second child of each join, left on the deque while the first one
  // sleeps, runs as a job; one taken back by its sibling would not.
  EXPECT_EQ(count(s, slices_named("coro join child")), static_cast<std::size_t>(rounds));
  std::remove(path.c_str());
}

}  // namespace
