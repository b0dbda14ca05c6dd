// Wake-up latency: OpenMP, in a parallel region of 2 threads, as in
// round_trip/omp.cpp: thread 0 sleeps 1 ms, creates one task and waits for
// it on an atomic counter outside any task scheduling point; thread 1 waits
// at the region's closing barrier, where libgomp wakes it to run the task.
#include <omp.h>

#include <atomic>
#include <cstdint>

#include "wake_latency/wake_latency.hpp"

namespace {

// Lives until the region's closing barrier, which completes every task.
struct channel {
  bool ran_elsewhere = false;              // written by the task before `finished`
  std::atomic<std::uint64_t> finished{0};  // tasks whose result is published
  std::uint64_t jobs = 0;                  // caller only
};

bool hand_over(channel* ch, std::chrono::steady_clock::time_point* started) {
  // firstprivate copies the pointers, not what they point to.
#pragma omp task firstprivate(ch, started)
  {
    *started = std::chrono::steady_clock::now();
    ch->ran_elsewhere = omp_get_thread_num() != 0;
    // Pairs with the acquire loads below.
    ch->finished.fetch_add(1, std::memory_order_release);
    ch->finished.notify_one();
  }
  ++ch->jobs;
  for (std::uint64_t seen = ch->finished.load(std::memory_order_acquire); seen != ch->jobs;
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
    auto one = [shared_ch](std::chrono::steady_clock::time_point* started) {
      return hand_over(shared_ch, started);
    };
    bench::wake_latency::measure(state, one);
  }
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::wake_latency::add("task", run); });

}  // namespace
