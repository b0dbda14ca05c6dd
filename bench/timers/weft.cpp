// Timers: weft, pool.spawn_after on a pool of bench::workers workers; the
// caller is not a worker and blocks in std::atomic::wait meanwhile.
#include <atomic>
#include <weft/weft.hpp>

#include "timers/timers.hpp"

namespace {

using steady = std::chrono::steady_clock;

// Work first, and one timer, so that the workers and the timer thread have
// started and gone to sleep.
void warm_up(weft::pool& pool) {
  for (int i = 0; i < 1000; ++i) pool.spawn([] {});
  std::atomic<bool> fired{false};
  pool.spawn_after(bench::timers::delay, [&fired] {
    // Release pairs with the acquire wait below.
    fired.store(true, std::memory_order_release);
    fired.notify_one();
  });
  fired.wait(false, std::memory_order_acquire);
  pool.wait();
}

void lateness(benchmark::State& state) {
  weft::pool pool{weft::pool_options{.threads = bench::workers}};
  warm_up(pool);
  std::atomic<int> ran{0};
  steady::time_point started{};  // written by the job before its release increment
  bool on_worker = false;
  auto sample = [&](steady::time_point) {
    const int before = ran.load(std::memory_order_relaxed);
    pool.spawn_after(bench::timers::delay, [&] {
      started = steady::now();
      on_worker = weft::this_worker::index().has_value();
      // Release pairs with the acquire wait below.
      ran.fetch_add(1, std::memory_order_release);
      ran.notify_one();
    });
    ran.wait(before, std::memory_order_acquire);
    return on_worker ? started : steady::time_point{};
  };
  bench::timers::lateness(state, sample);
  pool.wait();
}

void pending(benchmark::State& state) {
  weft::pool pool{weft::pool_options{.threads = bench::workers}};
  warm_up(pool);
  weft::timer far;
  auto arm = [&] { far = pool.spawn_after(bench::timers::far_away, [] {}); };
  auto disarm = [&] { return far.cancel(); };
  bench::timers::pending_cpu(state, arm, disarm);
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::timers::add_lateness("spawn_after", lateness);
  bench::timers::add_pending("spawn_after", pending);
});

}  // namespace
