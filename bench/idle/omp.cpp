// Idle: OpenMP, parallel regions of 2 threads. The work is tasks created by
// one thread (`single`); between regions libgomp's threads wait in its
// thread pool. For the sleeping job, thread 0 (the main thread) creates one
// task and waits on an atomic outside any task scheduling point, so thread 1
// runs it.
#include <omp.h>

#include <atomic>

#include "common/omp_tasks.hpp"
#include "idle/idle.hpp"

namespace {

struct omp_team {
  static constexpr bool has_workers = true;

  void work(std::int64_t n) { bench::omp_empty_tasks(n); }
  bool sleeping_job(std::chrono::nanoseconds d) {
    bool ran_elsewhere = false;  // written by the task before `done`
    std::atomic<bool> done{false};
    bool* out = &ran_elsewhere;
    std::atomic<bool>* flag = &done;
    // The region's closing barrier completes the task before these die.
#pragma omp parallel num_threads(bench::workers) firstprivate(out, flag, d)
    if (omp_get_thread_num() == 0) {
#pragma omp task firstprivate(out, flag, d)
      {
        std::this_thread::sleep_for(d);
        *out = omp_get_thread_num() != 0;
        // Pairs with the acquire in wait(): *out is visible once the
        // caller sees true.
        flag->store(true, std::memory_order_release);
        flag->notify_one();
      }
      flag->wait(false, std::memory_order_acquire);
    }
    return ran_elsewhere;
  }
};

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::idle::add<omp_team>("team"); });

}  // namespace
