// Idle: the sequential baseline, no threads at all: what the process itself
// (and the measurement) costs while it sleeps. The "job" sleeps on the
// calling thread.
#include "idle/idle.hpp"

namespace {

struct sequential {
  static constexpr bool has_workers = false;

  void work(std::int64_t n) {
    void (*volatile job)() noexcept = &bench::count_job;
    for (std::int64_t i = 0; i < n; ++i) job();
  }
  bool sleeping_job(std::chrono::nanoseconds d) {
    std::this_thread::sleep_for(d);
    return false;
  }
};

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::idle::add<sequential>("none"); });

}  // namespace
