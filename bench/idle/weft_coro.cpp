// Idle: weft coroutines (issue 45), on a pool of 2 workers.
//   idle/1000_coros_on_timers/coro  1,000 coroutines, each suspended in
//                                   co_await weft::sleep_until(t) on the
//                                   pool's timers; with the pool settled,
//                                   the process CPU during 1 s in which
//                                   they all stay suspended
// t lies past the measured second: afterwards every coroutine resumes and
// finishes, and the row checks that all 1,000 started before the period,
// none resumed during it, and every one resumed after its deadline.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

#include "idle/idle.hpp"

namespace {

constexpr std::int64_t coroutines = 1'000;
// After the settle and the measured period: the timers fire only once the
// measurement is over.
constexpr auto wake_margin = std::chrono::milliseconds{300};

struct counts {
  std::atomic<std::int64_t> started{0};
  std::atomic<std::int64_t> resumed{0};
};

// true if it resumed at or after its deadline.
weft::coro<bool> sleeper(std::chrono::steady_clock::time_point due, counts& c) {
  // Relaxed: tallies, read by the benchmark's thread after the pool's
  // futures (or the wait loop below) order them.
  c.started.fetch_add(1, std::memory_order_relaxed);
  co_await weft::sleep_until(due);
  const bool on_time = std::chrono::steady_clock::now() >= due;
  c.resumed.fetch_add(1, std::memory_order_relaxed);
  co_return on_time;
}

void coros_on_timers(benchmark::State& state) {
  weft::pool pool{weft::pool_options{.threads = bench::workers}};
  for (auto _ : state) {
    counts c;
    const auto due = std::chrono::steady_clock::now() + bench::idle::settle +
                     bench::idle::idle_period + wake_margin;
    std::vector<weft::future<bool>> done;
    done.reserve(coroutines);
    for (std::int64_t i = 0; i < coroutines; ++i) {
      done.push_back(weft::submit(pool, sleeper(due, c)));
    }
    // Every coroutine runs to its co_await within the settle time on an
    // idle pool; the check below fails the row if not.
    std::this_thread::sleep_for(bench::idle::settle);
    const std::int64_t started = c.started.load(std::memory_order_relaxed);
    const auto start = bench::process_cpu_time();
    std::this_thread::sleep_for(bench::idle::idle_period);
    state.counters["cpu_ms"] = bench::to_ms(bench::process_cpu_time() - start);
    const std::int64_t resumed_early = c.resumed.load(std::memory_order_relaxed);

    std::int64_t on_time = 0;
    for (weft::future<bool>& f : done) on_time += f.get() ? 1 : 0;
    if (!bench::check_equal(state, started, coroutines,
                            "coroutines suspended on their timers before the period") ||
        !bench::check_equal(state, resumed_early, 0,
                            "coroutines that resumed during the idle period") ||
        !bench::check_equal(state, on_time, coroutines,
                            "coroutines that resumed at or after their deadline") ||
        !bench::check_equal(state, c.resumed.load(std::memory_order_relaxed), coroutines,
                            "coroutines that finished after the period")) {
      return;
    }
  }
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::add("idle", "1000_coros_on_timers", "coro", coros_on_timers)
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
});

}  // namespace
