// Per-task costs of OpenMP tasks with dependences (flow_overhead.hpp): one
// parallel region of `workers` threads per run; one thread (`single`)
// creates the tasks, `depend(inout: ...)` on each resource a task writes,
// and waits with taskwait, running tasks itself meanwhile, as OpenMP's
// creating thread does. The other thread is the one helper.
//
// No flow_gap: libgomp runs a new task at once on the creating thread when
// more than 64 tasks per thread are queued, so 100,000 tasks cannot be
// queued before they run (and a task whose dependences are not met makes
// the creating thread wait there, so none can be held back by a gate).
// flow_emplace stays below that limit (a gate and 100 tasks per batch).
#include <omp.h>

#include "common/completion.hpp"
#include "flow_overhead/flow_overhead.hpp"

namespace {

using bench::flow_overhead::clock;
using bench::flow_overhead::resource;

class omp_library {
 public:
  omp_library(int workers, std::size_t /*max_unfinished*/) : workers_(workers) {}

  int status() const { return 0; }
  int workers() const { return workers_; }
  int helpers() const { return workers_ - 1; }
  static constexpr bool deferred = false;

  template <class F>
  void run(const F& f) {
    const int threads = workers_;
#pragma omp parallel num_threads(threads)
#pragma omp single
    f();
  }

  template <class F>
  void emplace(F body, resource* const* r, int n) {
    resource* a = r[0];
    resource* b = n > 1 ? r[1] : nullptr;
    resource* c = n > 2 ? r[2] : nullptr;
    resource* d = n > 3 ? r[3] : nullptr;
    resource* e = n > 4 ? r[4] : nullptr;
    switch (n) {
      case 1:
#pragma omp task firstprivate(body) depend(inout : a[0])
        body();
        break;
      case 2:
#pragma omp task firstprivate(body) depend(inout : a[0], b[0])
        body();
        break;
      case 3:
#pragma omp task firstprivate(body) depend(inout : a[0], b[0], c[0])
        body();
        break;
      case 4:
#pragma omp task firstprivate(body) depend(inout : a[0], b[0], c[0], d[0])
        body();
        break;
      default:
#pragma omp task firstprivate(body) depend(inout : a[0], b[0], c[0], d[0], e[0])
        body();
        break;
    }
  }

  template <class F>
  void emplace_free(F body) {
#pragma omp task firstprivate(body)
    body();
  }

  void wait() {
#pragma omp taskwait
  }

 private:
  int workers_;
};

// As in wake_latency/omp.cpp: the creating thread waits for the task with
// bench::completion, outside any task scheduling point, so the other thread
// (waiting at the end of `single`) runs it.
struct latency_channel {
  int creator = 0;
  bool elsewhere = false;  // written by the task before it publishes
  bench::completion done;

  bool hand_over(clock::time_point* started) {
    latency_channel* self = this;
#pragma omp task firstprivate(self, started)
    {
      *started = clock::now();
      self->elsewhere = omp_get_thread_num() != self->creator;
      self->done.publish();
    }
    done.issue();
    done.await();
    return elsewhere;
  }
};

void latency(benchmark::State& state, bool idle) {
  omp_library lib(bench::workers, 0);
  // Outside the region: it lives until the region's closing barrier, which
  // completes every task.
  latency_channel channel;
  lib.run([&] {
    channel.creator = omp_get_thread_num();
    auto hand_over = [&channel](clock::time_point* started) { return channel.hand_over(started); };
    bench::flow_overhead::latency(state, hand_over, idle);
  });
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::flow_overhead::add_emplace<omp_library>("task_depend");
  bench::flow_overhead::add_overhead<omp_library>("task_depend");
  bench::flow_overhead::add_latency("task", latency);
});

}  // namespace
