// weft::pool_options, what a pool is made with, and overflow_policy, its
// on_full member.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "job.hpp"

namespace weft {

namespace detail {
class bound;
}  // namespace detail

/// pool_options::on_full: one of the overflow policies, or a callable that
/// receives each job that found no room, as a weft::job.
class overflow_policy {
 public:
  // Implicit, so that .on_full = overflow::reject and .on_full = [](job) {...}
  // read as they should; the template's constraint excludes
  // overflow_policy itself, so it hides no copy or move.
  // NOLINTBEGIN(google-explicit-constructor,bugprone-forwarding-reference-overload)

  /// overflow::block, reject or run_here.
  overflow_policy(overflow o = overflow::block) noexcept : kind_(o) {}
  /// A callable f(weft::job): called on the submitting thread with the job.
  /// A job for a chosen worker (spawn_on, submit_on) is not handed to it:
  /// it waits for room, as with overflow::block.
  template <class F>
  requires(std::is_invocable_v<F&, job> && !std::is_same_v<std::decay_t<F>, overflow_policy> &&
           !std::is_same_v<std::decay_t<F>, overflow>) overflow_policy(F&& f)
      : handler_(std::forward<F>(f)) {}
  // NOLINTEND(google-explicit-constructor,bugprone-forwarding-reference-overload)

 private:
  friend class detail::bound;  // applies the policy (detail/core/bound.hpp)
  overflow kind_ = overflow::block;
  std::function<void(job)> handler_;  // set: the callable policy
};

/// Options of a pool, given to its constructor: pool{{.threads = 4, .name = "io"}}.
struct pool_options {
  /// Worker threads. 0 is sequential mode: no threads; jobs run on the thread
  /// that waits (wait, get, join, wait_until), in submission order. Unset:
  /// cpus.size() if cpus is set, else available_parallelism().
  std::optional<std::size_t> threads = std::nullopt;
  /// The most workers pool::resize() may give the pool; 0: the initial
  /// worker count (then resize() can shrink the pool and grow it back, not
  /// beyond). It sizes per-worker state: slots() is max_threads + 1. Must
  /// be at least the initial count and at most 65,536, and 0 in sequential
  /// mode (usage_error; docs/control.md, "Resizing").
  std::size_t max_threads = 0;
  /// Worker threads are named "<name>-<index>" (truncated to 15 characters).
  std::string name = "weft";
  /// Receives every exception that escapes a detached job (spawn, a task_group
  /// destroyed without wait, a discarded future). When empty, pool::wait()
  /// rethrows them instead, oldest first, one per call.
  std::function<void(std::exception_ptr)> on_error = nullptr;
  /// When true, a thread that is not a worker and waits for this pool's work
  /// (future::get/wait, wait, join, task_group::wait, flow::wait) runs the
  /// jobs it submitted itself that no worker has started yet, instead of
  /// only waiting for a worker to wake (docs/waiting.md, "Outside waits").
  /// One such thread at a time (the pool's helper slot); its jobs see
  /// this_worker::index() == max_size(). Off by default: then only
  /// pool::wait_until, and an outside caller of a parallel algorithm (who
  /// runs the loop in a worker's place, docs/algorithms.md), run jobs on a
  /// thread that is not a worker.
  bool waiters_help = false;
  /// Records what every worker does into a per-thread ring in memory and
  /// writes it to this file, as Chrome trace event JSON that Perfetto and
  /// chrome://tracing open, when the pool is destroyed (docs/tracing.md).
  /// Empty: the environment variable WEFT_TRACE names the file instead;
  /// neither: no trace.
  std::string trace = {};
  /// Records each thread's ring keeps (64 bytes each; rounded up to a power
  /// of two, at most 2^32); when a ring is full the oldest go, and the file
  /// says how many.
  std::size_t trace_records = 65536;
  /// Pins worker i to CPU cpus[i % cpus.size()] (round-robin when threads
  /// says more than cpus lists); empty: no pinning. Every CPU must be in
  /// allowed_cpus(), else the constructor throws usage_error, as it does for
  /// cpus with threads = 0 (docs/control.md, "Pinning workers to CPUs").
  std::vector<int> cpus = {};
  /// Called on each worker thread with its index, after its pinning and
  /// before it runs any job; the constructor returns once every worker's
  /// call has, and rethrows the first exception one threw (having stopped
  /// and joined every worker). Never called in sequential mode.
  std::function<void(std::size_t)> on_worker_start = nullptr;
  /// Called on each worker thread with its index after its last job, when
  /// the pool is destroyed (or its construction fails after that worker's
  /// start); an exception goes to on_error, else is printed to stderr.
  /// Neither hook is a job: this_worker::index() gives the worker's index,
  /// and a hook must not submit to its own pool or wait for its work
  /// (docs/control.md, "Worker hooks").
  std::function<void(std::size_t)> on_worker_stop = nullptr;
  /// Bounded submission: at most this many jobs submitted by threads that
  /// are not running one of the pool's jobs (spawn, submit and their
  /// priority and _on forms, spawn_all, submit_all, task_group::spawn) wait
  /// in the pool not yet started; 0: no bound. Jobs the pool's own jobs
  /// spawn are never held up (docs/control.md, "Bounded submission").
  /// Sequential mode (threads = 0) cannot have a bound: usage_error.
  std::size_t capacity = 0;
  /// What a submission that finds the bound reached does: overflow::block
  /// (the default), reject, run_here, or a callable taking a weft::job.
  overflow_policy on_full = overflow::block;
};

}  // namespace weft
