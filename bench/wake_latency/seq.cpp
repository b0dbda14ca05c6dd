// Wake-up latency floor: no library, one plain std::thread that parks on a
// condition variable (a futex) between samples and records when it wakes.
// Any runtime whose idle workers really sleep pays at least this; on a VM
// it includes the host waking the halted vCPU. The caller waits for the
// sample with a condition variable too.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "wake_latency/wake_latency.hpp"

namespace {

void run(benchmark::State& state) {
  std::mutex m;
  std::condition_variable to_worker;
  std::condition_variable to_caller;
  std::chrono::steady_clock::time_point* request = nullptr;  // guarded by m
  bool served = false;                                       // guarded by m
  bool stop = false;                                         // guarded by m
  const std::thread::id caller = std::this_thread::get_id();
  bool ran_elsewhere = false;  // guarded by m

  std::thread sleeper([&] {
    std::unique_lock lock{m};
    for (;;) {
      to_worker.wait(lock, [&] { return request != nullptr || stop; });
      if (stop) return;
      *request = std::chrono::steady_clock::now();
      ran_elsewhere = std::this_thread::get_id() != caller;
      request = nullptr;
      served = true;
      to_caller.notify_one();
    }
  });

  auto hand_over = [&](std::chrono::steady_clock::time_point* started) {
    std::unique_lock lock{m};
    request = started;
    served = false;
    to_worker.notify_one();
    to_caller.wait(lock, [&] { return served; });
    return ran_elsewhere;
  };
  bench::wake_latency::measure(state, hand_over);
  {
    const std::lock_guard lock{m};
    stop = true;
  }
  to_worker.notify_one();
  sleeper.join();
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::wake_latency::add("condvar_floor", run); });

}  // namespace
