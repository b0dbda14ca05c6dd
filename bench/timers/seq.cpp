// Timers, the floor: no library, one plain std::thread that sleeps with
// condition_variable::wait_until to each deadline and records when it wakes
// (its timer slack set to 1 ns, as weft's timer thread's). A runtime whose
// timer thread really sleeps pays at least this before it even hands the job
// to a worker. The caller hands over each deadline and waits for the wake-up
// with the same mutex and condition variables.
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "timers/timers.hpp"

namespace {

using steady = std::chrono::steady_clock;

class sleeper {
 public:
  sleeper() : thread_([this] { run(); }) {}
  sleeper(const sleeper&) = delete;
  sleeper& operator=(const sleeper&) = delete;
  ~sleeper() {
    {
      const std::lock_guard lock{m_};
      stop_ = true;
    }
    to_sleeper_.notify_one();
    thread_.join();
  }

  // Sleeps until `due` on the sleeper thread; returns when it woke.
  steady::time_point sleep_until(steady::time_point due) {
    std::unique_lock lock{m_};
    deadline_ = due;
    woke_.reset();
    to_sleeper_.notify_one();
    to_caller_.wait(lock, [&] { return woke_.has_value(); });
    return *woke_;
  }

  // Arms a deadline and returns at once (for the CPU of a pending one).
  void arm(steady::time_point due) {
    {
      const std::lock_guard lock{m_};
      deadline_ = due;
      woke_.reset();
    }
    to_sleeper_.notify_one();
  }
  // Disarms it; true if it had not fired.
  bool disarm() {
    const std::lock_guard lock{m_};
    const bool pending = deadline_.has_value();
    deadline_.reset();
    to_sleeper_.notify_one();
    return pending;
  }

 private:
  void run() {
    bench::timers::precise_timer_slack();
    std::unique_lock lock{m_};
    for (;;) {
      to_sleeper_.wait(lock, [&] { return deadline_.has_value() || stop_; });
      if (stop_) return;
      // As a timer thread: asleep until the deadline, woken early only by a
      // change of plan.
      while (!stop_ && deadline_ && steady::now() < *deadline_) {
        to_sleeper_.wait_until(lock, *deadline_);
      }
      if (stop_) return;
      if (!deadline_) continue;  // disarmed
      woke_ = steady::now();
      deadline_.reset();
      to_caller_.notify_one();
    }
  }

  std::mutex m_;
  std::condition_variable to_sleeper_;
  std::condition_variable to_caller_;
  std::optional<steady::time_point> deadline_;  // guarded by m_
  std::optional<steady::time_point> woke_;      // guarded by m_
  bool stop_ = false;                           // guarded by m_
  std::thread thread_;
};

void lateness(benchmark::State& state) {
  sleeper s;
  auto sample = [&s](steady::time_point due) { return s.sleep_until(due); };
  bench::timers::lateness(state, sample);
}

void pending(benchmark::State& state) {
  sleeper s;
  auto arm = [&s] { s.arm(steady::now() + bench::timers::far_away); };
  auto disarm = [&s] { return s.disarm(); };
  bench::timers::pending_cpu(state, arm, disarm);
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::timers::add_lateness("condvar_wait_until", lateness);
  bench::timers::add_pending("condvar_wait_until", pending);
});

}  // namespace
