// Resize cost, the floor: no library. Grow is a std::thread made and run to
// its first instruction, shrink the same thread, blocked on a condition
// variable, told to end and joined (resize.hpp).
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "resize/resize.hpp"

namespace {

using bench::resize::steady;

void thread_start_and_join(benchmark::State& state) {
  std::optional<std::thread> worker;
  std::mutex m;
  std::condition_variable cv;
  bool stop = false;
  std::atomic<bool> running{false};
  steady::time_point started{};  // written before the release store of running
  auto grow = [&] {
    stop = false;
    running.store(false, std::memory_order_relaxed);
    worker.emplace([&] {
      started = steady::now();
      // Release pairs with the acquire wait below.
      running.store(true, std::memory_order_release);
      running.notify_one();
      std::unique_lock lock{m};
      cv.wait(lock, [&] { return stop; });
    });
    running.wait(false, std::memory_order_acquire);
    return started;
  };
  auto shrink = [&] {
    {
      const std::lock_guard lock{m};
      stop = true;
    }
    cv.notify_one();
    worker->join();
  };
  bench::resize::measure(state, grow, shrink);
}

const int timing = bench::on_startup(bench::suite::timing,
                                     [] { bench::resize::add("thread", thread_start_and_join); });

}  // namespace
