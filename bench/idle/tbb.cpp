// Idle: oneTBB, a task_arena of 2 threads. The work runs in the arena (the
// caller takes part); the sleeping job is enqueued from outside the arena so
// that a TBB worker runs it while the caller waits on an atomic
// (std::atomic::wait: spins briefly, then sleeps on a futex).
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <atomic>

#include "idle/idle.hpp"

namespace {

struct tbb_arena {
  static constexpr bool has_workers = true;
  tbb::task_arena arena{bench::workers};

  void work(std::int64_t n) {
    arena.execute([n] {
      tbb::task_group g;
      for (std::int64_t i = 0; i < n; ++i) g.run([] { bench::count_job(); });
      g.wait();
    });
  }
  bool sleeping_job(std::chrono::nanoseconds d) {
    const std::thread::id caller = std::this_thread::get_id();
    bool ran_elsewhere = false;    // written by the job before `progress`
    std::atomic<int> progress{0};  // 0 queued, 1 result published, 2 job gone
    arena.enqueue([&, d] {
      std::this_thread::sleep_for(d);
      ran_elsewhere = std::this_thread::get_id() != caller;
      // Pairs with the acquire loads below: ran_elsewhere is visible once
      // the caller sees 1.
      progress.store(1, std::memory_order_release);
      progress.notify_one();
      // Pairs with the acquire load of the drain: after it, the job no
      // longer touches this frame.
      progress.store(2, std::memory_order_release);
    });
    progress.wait(0, std::memory_order_acquire);
    const bool result = ran_elsewhere;
    while (progress.load(std::memory_order_acquire) != 2) std::this_thread::yield();
    return result;
  }
};

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::idle::add<tbb_arena>("arena"); });

}  // namespace
