// Wake-up latency: oneTBB, task_arena::enqueue from the main thread (not in
// the arena), after 1 ms of idleness. The caller waits on an atomic counter
// with std::atomic::wait, as in round_trip/tbb.cpp.
#include <oneapi/tbb/task_arena.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "wake_latency/wake_latency.hpp"

namespace {

void run(benchmark::State& state) {
  tbb::task_arena arena(bench::workers);
  arena.initialize();
  const std::thread::id caller = std::this_thread::get_id();
  bool ran_elsewhere = false;              // written by the job before `finished`
  std::atomic<std::uint64_t> finished{0};  // jobs whose result is published
  std::atomic<std::uint64_t> departed{0};  // jobs that no longer touch this frame
  std::uint64_t jobs = 0;

  auto hand_over = [&](std::chrono::steady_clock::time_point* started) {
    arena.enqueue([&, started] {
      *started = std::chrono::steady_clock::now();
      ran_elsewhere = std::this_thread::get_id() != caller;
      // Pairs with the acquire loads below: the job's writes are visible to
      // the caller once it sees the new count.
      finished.fetch_add(1, std::memory_order_release);
      finished.notify_one();
      // Pairs with the acquire load of the final drain.
      departed.fetch_add(1, std::memory_order_release);
    });
    ++jobs;
    for (std::uint64_t seen = finished.load(std::memory_order_acquire); seen != jobs;
         seen = finished.load(std::memory_order_acquire)) {
      finished.wait(seen, std::memory_order_acquire);
    }
    return ran_elsewhere;
  };
  bench::wake_latency::measure(state, hand_over);
  while (departed.load(std::memory_order_acquire) != jobs) std::this_thread::yield();
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::wake_latency::add("arena_enqueue", run); });

}  // namespace
