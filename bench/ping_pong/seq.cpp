// The floor of any hand-over between two threads on this machine: a bare
// atomic ping-pong. The main thread stores an odd value, a second thread
// spinning on the atomic answers with the next even one; one round trip is
// one cache line moving to the other core and back. Timed like
// round_trip/: each of 2,048 round trips on its own, median_ns over all.
// Run beside the libraries' round trips, so that they can be reported as
// multiples of it.
//
// Name: "ping_pong/2048/atomic" (counter median_ns).
#include <atomic>
#include <cstdint>
#include <thread>

#include "round_trip/round_trip.hpp"

namespace {

void run(benchmark::State& state) {
  std::atomic<std::uint64_t> ball{0};
  std::atomic<bool> stop{false};
  std::thread partner([&] {
    std::uint64_t expect = 1;
    while (!stop.load(std::memory_order_relaxed)) {
      // Acquire/release: the ball itself is the only data.
      if (ball.load(std::memory_order_acquire) == expect) {
        ball.store(expect + 1, std::memory_order_release);
        expect += 2;
      }
    }
  });
  std::uint64_t next = 1;
  auto trip = [&] {
    ball.store(next, std::memory_order_release);
    while (ball.load(std::memory_order_acquire) != next + 1) {
    }
    next += 2;
    return true;  // answered by the partner thread
  };
  bench::round_trip::measure(state, trip);
  stop.store(true, std::memory_order_relaxed);
  partner.join();
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::add("ping_pong", std::to_string(bench::round_trip::rounds), "atomic", run)
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(bench::min_time)
      ->MinWarmUpTime(bench::warm_up)
      ->UseRealTime();
});

}  // namespace
