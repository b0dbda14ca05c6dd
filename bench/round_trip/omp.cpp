// Round trip: OpenMP, in a parallel region of 2 threads. Thread 0 (the main
// thread) creates one `task` per round trip and waits for it with
// bench::completion, outside any task scheduling point, so it never runs the
// task itself; thread 1 waits at the region's closing barrier, where libgomp
// wakes it to run queued tasks.
#include <omp.h>

#include "common/completion.hpp"
#include "round_trip/round_trip.hpp"

namespace {

// Lives until the region's closing barrier, which completes every task.
struct channel {
  bool ran_elsewhere = false;  // written by the task before it publishes
  bench::completion done;
};

bool trip(channel* ch) {
  // firstprivate copies the pointer, not the channel.
#pragma omp task firstprivate(ch)
  {
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
    auto one = [shared_ch] { return trip(shared_ch); };
    bench::round_trip::measure(state, one);
  }
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::round_trip::add("task", run); });

}  // namespace
