// Round trip: oneTBB, task_arena::enqueue from the main thread, which is not
// in the arena, so a TBB worker runs the job. oneTBB has no future for an
// enqueued job: the caller waits on an atomic counter with
// std::atomic::wait (spins briefly, then sleeps on a futex), the same
// blocking shape as weft's future::get from a non-worker thread.
#include <oneapi/tbb/task_arena.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "round_trip/round_trip.hpp"

namespace {

void run(benchmark::State& state) {
  tbb::task_arena arena(bench::workers);
  arena.initialize();
  const std::thread::id caller = std::this_thread::get_id();
  bool ran_elsewhere = false;              // written by the job before `finished`
  std::atomic<std::uint64_t> finished{0};  // jobs whose result is published
  std::atomic<std::uint64_t> departed{0};  // jobs that no longer touch this frame
  std::uint64_t trips = 0;

  auto trip = [&] {
    arena.enqueue([&] {
      ran_elsewhere = std::this_thread::get_id() != caller;
      // Pairs with the acquire loads below: ran_elsewhere is visible to the
      // caller once it sees the new count.
      finished.fetch_add(1, std::memory_order_release);
      finished.notify_one();
      // Pairs with the acquire load of the final drain: after it, no job
      // touches this stack frame.
      departed.fetch_add(1, std::memory_order_release);
    });
    ++trips;
    for (std::uint64_t seen = finished.load(std::memory_order_acquire); seen != trips;
         seen = finished.load(std::memory_order_acquire)) {
      finished.wait(seen, std::memory_order_acquire);
    }
    return ran_elsewhere;
  };
  bench::round_trip::measure(state, trip);
  while (departed.load(std::memory_order_acquire) != trips) std::this_thread::yield();
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::round_trip::add("arena_enqueue", run); });

}  // namespace
