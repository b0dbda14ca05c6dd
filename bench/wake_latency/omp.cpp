// Wake-up latency: OpenMP, in a parallel region of 2 threads, as in
// round_trip/omp.cpp: thread 0 sleeps 1 ms, creates one task and waits for
// it with bench::completion outside any task scheduling point; thread 1
// waits at the region's closing barrier, where libgomp wakes it to run the
// task.
#include <omp.h>

#include "common/completion.hpp"
#include "wake_latency/wake_latency.hpp"

namespace {

// Lives until the region's closing barrier, which completes every task.
struct channel {
  bool ran_elsewhere = false;  // written by the task before it publishes
  bench::completion done;
};

bool hand_over(channel* ch, std::chrono::steady_clock::time_point* started) {
  // firstprivate copies the pointers, not what they point to.
#pragma omp task firstprivate(ch, started)
  {
    *started = std::chrono::steady_clock::now();
    ch->ran_elsewhere = omp_get_thread_num() != 0;
    ch->done.publish();
  }
  ch->done.issue();
  ch->done.await();
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
