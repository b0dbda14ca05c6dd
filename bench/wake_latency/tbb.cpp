// Wake-up latency: oneTBB, task_arena::enqueue from the main thread (not in
// the arena), after 1 ms of idleness; the caller waits with
// bench::completion, as in round_trip/tbb.cpp.
#include <oneapi/tbb/task_arena.h>

#include <thread>

#include "common/completion.hpp"
#include "wake_latency/wake_latency.hpp"

namespace {

void run(benchmark::State& state) {
  tbb::task_arena arena(bench::workers);
  arena.initialize();
  const std::thread::id caller = std::this_thread::get_id();
  bool ran_elsewhere = false;  // written by the job before it publishes
  bench::completion done;

  auto hand_over = [&](std::chrono::steady_clock::time_point* started) {
    arena.enqueue([&, started] {
      *started = std::chrono::steady_clock::now();
      ran_elsewhere = std::this_thread::get_id() != caller;
      done.publish();
      done.depart();
    });
    done.issue();
    done.await();
    return ran_elsewhere;
  };
  bench::wake_latency::measure(state, hand_over);
  done.drain();
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::wake_latency::add("arena_enqueue", run); });

}  // namespace
