// Round trip: OpenMP, in a parallel region of 2 threads. Thread 0 (the main
// thread) creates one `task` per round trip and waits for it on an atomic
// counter with std::atomic::wait, outside any task scheduling point, so it
// never runs the task itself; thread 1 waits at the region's closing
// barrier, where libgomp wakes it to run queued tasks.
#include <omp.h>

#include <atomic>
#include <cstdint>

#include "round_trip/round_trip.hpp"

namespace {

// Lives until the region's closing barrier, which completes every task.
struct channel {
  bool ran_elsewhere = false;              // written by the task before `finished`
  std::atomic<std::uint64_t> finished{0};  // tasks whose result is published
  std::uint64_t trips = 0;                 // caller only
};

bool trip(channel* ch) {
  // firstprivate copies the pointer, not the channel.
#pragma omp task firstprivate(ch)
  {
    ch->ran_elsewhere = omp_get_thread_num() != 0;
    // Pairs with the acquire loads below: ran_elsewhere is visible to the
    // caller once it sees the new count.
    ch->finished.fetch_add(1, std::memory_order_release);
    ch->finished.notify_one();
  }
  ++ch->trips;
  for (std::uint64_t seen = ch->finished.load(std::memory_order_acquire); seen != ch->trips;
       seen = ch->finished.load(std::memory_order_acquire)) {
    ch->finished.wait(seen, std::memory_order_acquire);
  }
  return ch->ran_elsewhere;
}

void run(benchmark::State& state) {
  channel ch;
  channel* shared_ch = &ch;
#pragma omp parallel num_threads(bench::workers) firstprivate(shared_ch)
  if (omp_get_thread_num() == 0) {
    auto one = [shared_ch] { return trip(shared_ch); };
    bench::round_trip::measure(state, one);
  }
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::round_trip::add("task", run); });

}  // namespace
