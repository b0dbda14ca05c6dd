// Per-task costs of a sequential task flow (seed 003's "artificial"
// metrics): tasks are emplaced in program order, each declaring the objects
// ("resources") it writes, and the library runs each after every earlier
// task that used one of them. Four workloads:
//
//   flow_emplace/<d>dep_<state>/<variant>   emplace overhead
//     Batches of 100 tasks, each writing d resources (d = 1: resource i % 5;
//     d = 5: all five), emplaced back to back; only the emplace calls are
//     timed. ns_per_task = emplace time / tasks, over 1,000 batches.
//       idle: before the batch, a gate task that writes all five resources
//             and blocks until the batch is in: no batch task can run yet,
//             and the other workers have nothing to do.
//       busy: before the batch, every worker (every thread but the caller)
//             is given a task that blocks until the batch is in, and the
//             caller waits until all of them have started: the batch's first
//             task per resource is ready at once, and no worker is free.
//
//   flow_gap/<100000[_chain]>/<variant>     scheduling gap
//     One worker. A gate task occupies it, then 100,000 empty tasks are
//     emplaced (independent, or _chain: each writing the same resource);
//     the timed part opens the gate and waits for all of them.
//     ns_per_task = that time / 100,000: the cost of taking the next task
//     (and, for the chain, of releasing it) with the queue full.
//
//   flow_overhead/<graph>/<variant>          total overhead per task
//     Tasks that sleep (so that they take no CPU and leave the cores to the
//     library), emplaced and waited for; the time from the first emplace to
//     the end of the wait is measured.
//       independent_25us  10,000 tasks of 25 us, no resources
//       chains_25us       10,000 tasks of 25 us, task i writes resource
//                         i % workers (one chain per worker)
//       random_25-500us   2,000 tasks of 25 to 500 us (uniform), each
//                         writing 1 to min(5, workers) distinct resources
//                         out of `workers` many (fixed seed)
//     ideal = max(critical path, total work / workers), from the durations
//     the tasks actually slept (each task measures its own body): a sleep
//     overshoots its request by tens of microseconds on this kind of
//     machine, which is the kernel's cost, not the library's.
//     ns_per_task = (measured - ideal) / tasks; cpu_ns_per_task = the
//     process's CPU time during the measurement / tasks. The JSON also has
//     nominal_ns_per_task (the ideal from the requested durations, seed
//     003's exact definition), task_us (the mean actual task length),
//     measured_ms and ideal_ms.
//
//   flow_latency/<back_to_back|1ms_idle>/<variant>   latency
//     One independent task at a time: the time from just before its emplace
//     to the first line of its body, median (median_ns) and 90th
//     percentile (p90_ns) of 1,000; the caller waits for each task before
//     the next. back_to_back: the next task is emplaced right away;
//     1ms_idle: after 1 ms of sleep, long enough for idle workers to park.
//     idle_cpu_ms_per_s: the CPU time of every thread but the caller during
//     those sleeps, per second of sleep (what idle workers burn).
//
// Every run is verified: each resource ends with the value that running the
// tasks in program order gives (order-sensitive: value = value * p ^ task),
// every task ran once, and where it matters the task ran on a worker.
// Workers: bench::workers (2) everywhere but flow_gap (1). Tasks that sleep
// lower their thread's timer slack to 1 ns first (prctl PR_SET_TIMERSLACK,
// once per thread), else Linux adds 50 us to every sleep.
//
// A competitor supplies a `Library` type:
//   Library(int workers, std::size_t max_unfinished)
//                     starts the runtime; max_unfinished: how many tasks a
//                     benchmark keeps unfinished at once (for a library that
//                     limits it; 0: keep the default)
//   int status() const            0 if the runtime started
//   int workers() const           threads that run tasks
//   int helpers() const           of which are not the calling thread
//   static constexpr bool deferred
//                     true if a task with accesses starts only at wait()
//                     (oneTBB: the graph is built first)
//   void run(F f)                 calls f() where tasks may be emplaced
//   void emplace(F body, resource* const* r, int n)
//                     a task calling body() after every earlier task that
//                     used one of r[0..n), n <= 5
//   void emplace_free(F body)     a task without accesses, ready at once
//   void wait()                   returns once every task has finished
#pragma once

#include <benchmark/benchmark.h>
#include <sys/prctl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/check.hpp"
#include "common/job_counter.hpp"
#include "common/measure.hpp"
#include "common/registry.hpp"

namespace bench::flow_overhead {

using clock = std::chrono::steady_clock;

inline constexpr int max_accesses = 5;

// An object that tasks write; one per cache line.
struct alignas(64) resource {
  std::uint64_t value = 0;
};

// What a task does to a resource it writes: order-sensitive, so the final
// value tells whether the tasks that wrote it ran in program order.
inline std::uint64_t mix(std::uint64_t value, std::uint64_t task) noexcept {
  return value * 0x100000001b3ULL ^ (task + 1);
}

// Sleeps for `d` with a timer slack of 1 ns on this thread.
inline void sleep_for(std::chrono::nanoseconds d) {
  thread_local const bool slack_set = prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) == 0;
  (void)slack_set;
  std::this_thread::sleep_for(d);
}

// Tasks that block until the caller opens the gate, and tell it when they
// have started. They wait on a futex, taking no CPU.
class gate {
 public:
  void reset() noexcept {
    open_.store(false, std::memory_order_relaxed);
    started_.store(0, std::memory_order_relaxed);
  }
  void hold() noexcept {
    started_.fetch_add(1, std::memory_order_release);
    while (!open_.load(std::memory_order_acquire)) open_.wait(false, std::memory_order_acquire);
  }
  void await_started(int n) const noexcept {
    while (started_.load(std::memory_order_acquire) < n) std::this_thread::yield();
  }
  void open() noexcept {
    open_.store(true, std::memory_order_release);
    open_.notify_all();
  }

 private:
  std::atomic<bool> open_{false};
  std::atomic<int> started_{0};
};

template <class Library>
bool started(benchmark::State& state, const Library& lib) {
  return check_equal(state, lib.status(), 0, "the runtime's start-up status");
}

inline double ns_between(clock::time_point a, clock::time_point b) {
  return std::chrono::duration<double, std::nano>(b - a).count();
}

// ---------------------------------------------------------------------------
// flow_emplace

inline constexpr int emplace_batch = 100;
inline constexpr int emplace_batches = 1'000;
inline constexpr int emplace_resources = 5;

enum class worker_state { idle, busy };

template <class Library>
void emplace_overhead(benchmark::State& state, int deps, worker_state ws) {
  // The data outlives the library, which may keep it registered.
  std::array<resource, emplace_resources> res{};
  std::array<resource*, emplace_resources> all{};
  for (std::size_t r = 0; r < res.size(); ++r) all[r] = &res[r];
  gate g;
  Library lib(bench::workers, 0);
  if (!started(state, lib)) return;
  double total_ns = 0;
  std::int64_t total_tasks = 0;
  for (auto _ : state) {
    for (resource& r : res) r.value = 0;
    double ns = 0;
    lib.run([&] {
      for (int batch = 0; batch < emplace_batches; ++batch) {
        g.reset();
        if (ws == worker_state::idle) {
          lib.emplace([&g] { g.hold(); }, all.data(), emplace_resources);
          if (!Library::deferred) g.await_started(1);
        } else {
          for (int h = 0; h < lib.helpers(); ++h) lib.emplace_free([&g] { g.hold(); });
          g.await_started(lib.helpers());
        }
        const auto start = clock::now();
        if (deps == 1) {
          for (int i = 0; i < emplace_batch; ++i) {
            resource* const* r = &all[static_cast<std::size_t>(i % emplace_resources)];
            resource* target = *r;
            lib.emplace([target] { ++target->value; }, r, 1);
          }
        } else {
          resource* first = all[0];
          for (int i = 0; i < emplace_batch; ++i) {
            lib.emplace(
                [first] {
                  for (int k = 0; k < emplace_resources; ++k) ++first[k].value;
                },
                all.data(), emplace_resources);
          }
        }
        const auto stop = clock::now();
        g.open();
        lib.wait();
        ns += ns_between(start, stop);
      }
    });
    state.SetIterationTime(ns / 1e9);
    total_ns += ns;
    total_tasks += std::int64_t{emplace_batch} * emplace_batches;
    const std::int64_t per_resource =
        std::int64_t{emplace_batches} *
        (deps == 1 ? emplace_batch / emplace_resources : emplace_batch);
    for (const resource& r : res) {
      if (!check_equal(state, static_cast<std::int64_t>(r.value), per_resource,
                       "tasks that wrote a resource")) {
        return;
      }
    }
  }
  state.counters["ns_per_task"] = total_tasks > 0 ? total_ns / static_cast<double>(total_tasks) : 0;
}

template <class Library>
void add_emplace(std::string_view variant) {
  for (const int deps : {1, 5}) {
    for (const worker_state ws : {worker_state::idle, worker_state::busy}) {
      const std::string size =
          std::to_string(deps) + "dep_" + (ws == worker_state::idle ? "idle" : "busy");
      bench::add(
          "flow_emplace", size, variant,
          [deps, ws](benchmark::State& state) { emplace_overhead<Library>(state, deps, ws); })
          ->Unit(benchmark::kMillisecond)
          ->Iterations(1)
          ->UseManualTime();
    }
  }
}

// ---------------------------------------------------------------------------
// flow_gap

inline constexpr int gap_tasks = 100'000;

template <class Library>
void scheduling_gap(benchmark::State& state, bool chain) {
  resource res;
  resource* target = &res;
  gate g;
  Library lib(1, gap_tasks + 1);
  if (!started(state, lib)) return;
  double total_ns = 0;
  std::int64_t total_tasks = 0;
  for (auto _ : state) {
    res.value = 0;
    g.reset();
    const job_tally before = job_tally_now();
    double ns = 0;
    lib.run([&] {
      if (lib.helpers() > 0) {
        lib.emplace_free([&g] { g.hold(); });
        g.await_started(lib.helpers());
      }
      for (int i = 0; i < gap_tasks; ++i) {
        if (chain) {
          lib.emplace([target] { ++target->value; }, &target, 1);
        } else {
          lib.emplace_free([] { count_job(); });
        }
      }
      const auto start = clock::now();
      g.open();
      lib.wait();
      ns = ns_between(start, clock::now());
    });
    state.SetIterationTime(ns / 1e9);
    total_ns += ns;
    total_tasks += gap_tasks;
    const job_tally after = job_tally_now();
    const auto ran = static_cast<std::int64_t>(chain ? res.value : after.total - before.total);
    if (!check_equal(state, ran, gap_tasks, "empty tasks that ran")) return;
  }
  state.counters["ns_per_task"] = total_tasks > 0 ? total_ns / static_cast<double>(total_tasks) : 0;
}

template <class Library>
void add_gap(std::string_view variant) {
  for (const bool chain : {false, true}) {
    bench::add("flow_gap", std::to_string(gap_tasks) + (chain ? "_chain" : ""), variant,
               [chain](benchmark::State& state) { scheduling_gap<Library>(state, chain); })
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1)
        ->UseManualTime();
  }
}

// ---------------------------------------------------------------------------
// flow_overhead

struct task_spec {
  std::chrono::nanoseconds length;
  int count = 0;  // resources written
  std::array<int, max_accesses> res{};
};

struct graph {
  std::string name;
  int resources = 0;
  std::vector<task_spec> tasks;
};

class rng {
 public:
  explicit rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() noexcept {  // splitmix64
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int below(int n) noexcept { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }

 private:
  std::uint64_t state_;
};

inline graph independent_graph() {
  graph g{"independent_25us", 0, {}};
  g.tasks.assign(10'000, task_spec{std::chrono::microseconds(25)});
  return g;
}

inline graph chains_graph(int workers) {
  graph g{"chains_25us", workers, {}};
  for (int i = 0; i < 10'000; ++i) {
    task_spec t{std::chrono::microseconds(25), 1};
    t.res[0] = i % workers;
    g.tasks.push_back(t);
  }
  return g;
}

inline graph random_graph(int workers) {
  graph g{"random_25-500us", workers, {}};
  rng r(0x5eed0003);
  const int most = std::min(max_accesses, workers);
  std::vector<int> pool(static_cast<std::size_t>(workers));
  for (int i = 0; i < 2'000; ++i) {
    task_spec t{std::chrono::microseconds(25 + r.below(476)), 1 + r.below(most)};
    for (int k = 0; k < workers; ++k) pool[static_cast<std::size_t>(k)] = k;
    for (int k = 0; k < t.count; ++k) {  // the first t.count of a partial shuffle
      const int pick = k + r.below(workers - k);
      std::swap(pool[static_cast<std::size_t>(k)], pool[static_cast<std::size_t>(pick)]);
      t.res[static_cast<std::size_t>(k)] = pool[static_cast<std::size_t>(k)];
    }
    g.tasks.push_back(t);
  }
  return g;
}

// The resources' values after running g's tasks in program order.
inline std::vector<std::uint64_t> expected_values(const graph& g) {
  std::vector<std::uint64_t> values(static_cast<std::size_t>(g.resources), 0);
  for (std::size_t t = 0; t < g.tasks.size(); ++t) {
    const task_spec& s = g.tasks[t];
    for (int k = 0; k < s.count; ++k) {
      std::uint64_t& v = values[static_cast<std::size_t>(s.res[static_cast<std::size_t>(k)])];
      v = mix(v, t);
    }
  }
  return values;
}

// max(critical path, total / workers) for task lengths `lengths` (ns).
inline double ideal_ns(const graph& g, const std::vector<double>& lengths, int workers) {
  std::vector<double> free_at(static_cast<std::size_t>(g.resources), 0.0);
  double critical = 0;
  double total = 0;
  for (std::size_t t = 0; t < g.tasks.size(); ++t) {
    const task_spec& s = g.tasks[t];
    double start = 0;
    for (int k = 0; k < s.count; ++k) {
      start =
          std::max(start, free_at[static_cast<std::size_t>(s.res[static_cast<std::size_t>(k)])]);
    }
    const double finish = start + lengths[t];
    for (int k = 0; k < s.count; ++k) {
      free_at[static_cast<std::size_t>(s.res[static_cast<std::size_t>(k)])] = finish;
    }
    critical = std::max(critical, finish);
    total += lengths[t];
  }
  return std::max(critical, total / workers);
}

// What one run's tasks share.
struct overhead_run {
  const task_spec* tasks;
  resource* res;
  std::int64_t* actual_ns;  // each task's measured length, 0 until it ran
};

inline void run_task(const overhead_run& run, std::size_t t) {
  const auto start = clock::now();
  const task_spec& s = run.tasks[t];
  sleep_for(s.length);
  for (int k = 0; k < s.count; ++k) {
    resource& r = run.res[s.res[static_cast<std::size_t>(k)]];
    r.value = mix(r.value, t);
  }
  run.actual_ns[t] = std::max<std::int64_t>(
      1, std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - start).count());
}

template <class Library>
void total_overhead(benchmark::State& state, const graph& g) {
  const std::size_t n = g.tasks.size();
  const std::vector<std::uint64_t> expected = expected_values(g);
  std::vector<resource> res(static_cast<std::size_t>(g.resources));
  std::vector<std::int64_t> actual(n);
  Library lib(bench::workers, 0);
  if (!started(state, lib)) return;
  std::vector<double> nominal(n);
  for (std::size_t t = 0; t < n; ++t) {
    nominal[t] = std::chrono::duration<double, std::nano>(g.tasks[t].length).count();
  }
  const int workers = lib.workers();
  for (auto _ : state) {
    for (resource& r : res) r.value = 0;
    std::fill(actual.begin(), actual.end(), 0);
    const overhead_run run{g.tasks.data(), res.data(), actual.data()};
    std::chrono::nanoseconds cpu{};
    double measured = 0;
    lib.run([&] {
      std::array<resource*, max_accesses> targets{};
      const auto cpu_before = process_cpu_time();
      const auto start = clock::now();
      for (std::size_t t = 0; t < n; ++t) {
        const task_spec& s = g.tasks[t];
        const auto body = [&run, t] { run_task(run, t); };
        if (s.count == 0) {
          lib.emplace_free(body);
        } else {
          for (int k = 0; k < s.count; ++k) {
            targets[static_cast<std::size_t>(k)] =
                &res[static_cast<std::size_t>(s.res[static_cast<std::size_t>(k)])];
          }
          lib.emplace(body, targets.data(), s.count);
        }
      }
      lib.wait();
      measured = ns_between(start, clock::now());
      cpu = process_cpu_time() - cpu_before;
    });
    state.SetIterationTime(measured / 1e9);

    const auto not_run = std::count(actual.begin(), actual.end(), 0);
    if (!check_equal(state, not_run, 0, "tasks that did not run")) return;
    for (std::size_t r = 0; r < res.size(); ++r) {
      if (!check(state, res[r].value == expected[r],
                 "resource " + std::to_string(r) + " differs from running the tasks in order")) {
        return;
      }
    }
    std::vector<double> lengths(actual.begin(), actual.end());
    const double ideal = ideal_ns(g, lengths, workers);
    const double ideal_nominal = ideal_ns(g, nominal, workers);
    double mean_length = 0;
    for (const double l : lengths) mean_length += l;
    mean_length /= static_cast<double>(n);
    const auto tasks = static_cast<double>(n);
    state.counters["ns_per_task"] = (measured - ideal) / tasks;
    state.counters["nominal_ns_per_task"] = (measured - ideal_nominal) / tasks;
    state.counters["cpu_ns_per_task"] =
        std::chrono::duration<double, std::nano>(cpu).count() / tasks;
    state.counters["task_us"] = mean_length / 1e3;
    state.counters["measured_ms"] = measured / 1e6;
    state.counters["ideal_ms"] = ideal / 1e6;
  }
}

template <class Library>
void add_overhead(std::string_view variant) {
  for (const graph& g :
       {independent_graph(), chains_graph(bench::workers), random_graph(bench::workers)}) {
    bench::add("flow_overhead", g.name, variant,
               [g](benchmark::State& state) { total_overhead<Library>(state, g); })
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1)
        ->UseManualTime();
  }
}

// ---------------------------------------------------------------------------
// flow_latency

inline constexpr int latency_samples = 1'000;
inline constexpr int latency_warm_up = 100;
inline constexpr std::chrono::milliseconds idle_time{1};

// `hand_over(started)` emplaces one independent task whose body first
// stores clock::now() into *started, waits until it has finished, and
// returns true if it ran on a thread other than the caller.
template <class HandOver>
void latency(benchmark::State& state, HandOver& hand_over, bool idle) {
  clock::time_point ignored{};
  for (int i = 0; i < latency_warm_up; ++i) hand_over(&ignored);
  std::vector<double> samples;
  samples.reserve(latency_samples);
  double idle_cpu_ns = 0;
  double idle_ns = 0;
  for (auto _ : state) {
    samples.clear();
    idle_cpu_ns = 0;
    idle_ns = 0;
    int ran_by_caller = 0;
    for (int i = 0; i < latency_samples; ++i) {
      if (idle) {
        const auto cpu_before = other_threads_cpu_time();
        const auto idle_start = clock::now();
        std::this_thread::sleep_for(idle_time);
        idle_ns += ns_between(idle_start, clock::now());
        idle_cpu_ns +=
            std::chrono::duration<double, std::nano>(other_threads_cpu_time() - cpu_before).count();
      }
      clock::time_point started{};
      const auto handed = clock::now();
      ran_by_caller += hand_over(&started) ? 0 : 1;
      samples.push_back(ns_between(handed, started));
    }
    if (!check_equal(state, ran_by_caller, 0, "tasks the caller ran itself")) return;
    const bool ordered =
        std::all_of(samples.begin(), samples.end(), [](double s) { return s >= 0; });
    if (!check(state, ordered, "a task started before it was emplaced")) return;
  }
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  state.counters["p90_ns"] = sorted.empty() ? 0 : sorted[sorted.size() * 9 / 10];
  state.counters["median_ns"] = median(samples);
  if (idle)
    state.counters["idle_cpu_ms_per_s"] = idle_ns > 0 ? idle_cpu_ns / 1e6 / (idle_ns / 1e9) : 0;
}

// `run(state, idle)` sets up the library and calls latency().
inline void add_latency(std::string_view variant, void (*run)(benchmark::State&, bool)) {
  for (const bool idle : {false, true}) {
    bench::add("flow_latency", idle ? "1ms_idle" : "back_to_back", variant,
               [run, idle](benchmark::State& state) { run(state, idle); })
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1)
        ->UseRealTime();
  }
}

}  // namespace bench::flow_overhead
