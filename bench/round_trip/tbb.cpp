// Round trip: oneTBB, task_arena::enqueue from the main thread, which is not
// in the arena, so a TBB worker runs the job. oneTBB has no future for an
// enqueued job: the caller waits with bench::completion.
#include <oneapi/tbb/task_arena.h>

#include <thread>

#include "common/completion.hpp"
#include "round_trip/round_trip.hpp"

namespace {

void run(benchmark::State& state) {
  tbb::task_arena arena(bench::workers);
  arena.initialize();
  const std::thread::id caller = std::this_thread::get_id();
  bool ran_elsewhere = false;  // written by the job before it publishes
  bench::completion done;

  auto trip = [&] {
    arena.enqueue([&] {
      ran_elsewhere = std::this_thread::get_id() != caller;
      done.publish();
      done.depart();
    });
    done.issue();
    done.await();
    return ran_elsewhere;
  };
  bench::round_trip::measure(state, trip);
  done.drain();
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::round_trip::add("arena_enqueue", run); });

}  // namespace
