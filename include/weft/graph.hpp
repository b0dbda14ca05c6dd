// weft::graph: task graphs built once and run many times on a pool.
//
// A graph owns its tasks; `emplace` adds one and returns a `weft::task`
// handle, `precede`/`succeed` add edges, `pool.run(graph)` starts a run and
// returns a `weft::future<void>`. Every task is a `detail::job` living in the
// graph's own storage, so a run allocates nothing: the dependency counters
// reset themselves as the tasks run. docs/graph.md describes the semantics
// (conditional tasks, cancellation, exceptions, reruns) and the machinery.
#pragma once
#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <new>
#include <ranges>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "detail/graph_core.hpp"
#include "detail/graph_node.hpp"
#include "detail/job.hpp"
#include "errors.hpp"
#include "future.hpp"
#include "pool.hpp"

namespace weft {

/// Misuse of a graph: a cycle among normal edges (reported by pool::run, with
/// the tasks on it), running a graph whose previous run has not finished,
/// an edge between tasks of two graphs, changing a graph while it runs, using
/// an empty or moved-from graph or task handle, and, in builds without
/// NDEBUG, using a task handle after its graph was destroyed.
class graph_error : public usage_error {
 public:
  using usage_error::usage_error;
};

/// What a run's future rethrows when the run was cancelled (graph::cancel, or
/// the future's cancel) before it finished and no task threw.
class run_cancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class graph;
class task;
class semaphore;
class subflow;

/// A handle to a task of a graph: two words, freely copyable, valid as long as
/// its graph (moving the graph keeps it valid). A default-constructed handle
/// is empty; using it throws graph_error.
class task {
 public:
  task() noexcept = default;

  /// This task runs before each of `others` (normal edges; from a condition
  /// task, conditional edges, numbered in the order they are added).
  template <std::same_as<task>... T>
  task precede(const T&... others) const {
    detail::graph_node& self = node();
    (self.owner->link(&self, &others.node()), ...);
    return *this;
  }

  /// This task runs after each of `others`.
  template <std::same_as<task>... T>
  task succeed(const T&... others) const {
    detail::graph_node& self = node();
    (self.owner->link(&others.node(), &self), ...);
    return *this;
  }

  /// Removes one edge from this task to each of `others` (one per call, if
  /// precede added it twice). A condition task's later edges move down one
  /// index. Throws graph_error if there is no such edge, or while the graph
  /// runs (docs/graph.md, "Editing a built graph").
  template <std::same_as<task>... T>
  task remove_successor(const T&... others) const {
    detail::graph_node& self = node();
    (self.owner->unlink(&self, &others.node()), ...);
    return *this;
  }

  /// Before each run of this task, takes a unit of s (of each, in the order
  /// added): a task that finds one empty waits, queued on it and holding no
  /// worker, until a release gives it a turn (docs/graph.md, "Semaphores").
  task acquire(semaphore& s) const {
    detail::graph_node& n = node();
    n.owner->add_sync(&n, s, true);
    return *this;
  }
  /// After each run of this task, gives a unit back to s, and reschedules
  /// the tasks waiting on it.
  task release(semaphore& s) const {
    detail::graph_node& n = node();
    n.owner->add_sync(&n, s, false);
    return *this;
  }

  /// Replaces the task's callable with f (a placeholder gets work): the
  /// task becomes a plain, condition or multi-condition task by what f
  /// returns, as graph::emplace decides, and keeps its edges, name and
  /// handle. Throws graph_error while the graph runs, or for a composed
  /// task (graph::compose); if copying f throws, the task is left a
  /// placeholder.
  template <class F>
  task work(F&& f) const {
    using C = std::decay_t<F>;
    if constexpr (detail::valid_task<C>()) {
      using R = detail::task_result_t<C>;
      detail::graph_node& n = node();
      n.owner->set_work<C, R>(&n, detail::kind_for<R>(), std::forward<F>(f));
    }
    return *this;
  }

  /// Names the task in dump() output and in cycle reports.
  task name(std::string_view name) const {
    detail::graph_node& n = node();
    n.owner->set_name(&n, name);
    return *this;
  }
  /// The task's name; empty if it was never named.
  [[nodiscard]] std::string_view name() const {
    const detail::graph_node& n = node();
    return n.owner->name_of(&n);
  }

  /// Stops the task from running from now on, in this run and later ones,
  /// until reset(); its successors do not run either when it is skipped.
  /// Returns false if the task has already started (in this run or an
  /// earlier one since the last reset), so it has run or still runs once;
  /// true otherwise.
  bool cancel() const {
    // Relaxed: see graph_node::claim().
    return node().gate.exchange(detail::graph_node::cancelled, std::memory_order_relaxed) !=
           detail::graph_node::started;
  }
  /// Undoes cancel(): the task runs again in the next run.
  void reset() const { node().gate.store(detail::graph_node::open, std::memory_order_relaxed); }

  /// True for a default-constructed handle.
  [[nodiscard]] bool empty() const noexcept { return node_ == nullptr; }
  /// True for an empty task (graph::placeholder or graph::emplace()).
  [[nodiscard]] bool is_placeholder() const {
    return node().kind == detail::node_kind::placeholder;
  }
  /// True for a condition task (its callable returns a successor index) or a
  /// multi-condition task (it returns a range of them).
  [[nodiscard]] bool is_condition() const { return detail::chooses(node().kind); }
  /// Edges out of this task.
  [[nodiscard]] std::size_t successors() const { return node().successors.size(); }
  /// Edges into this task, normal and conditional.
  [[nodiscard]] std::size_t predecessors() const {
    const detail::graph_node& n = node();
    return std::size_t{n.strong} + n.weak;
  }

  friend bool operator==(const task& a, const task& b) noexcept { return a.node_ == b.node_; }

 private:
  friend class graph;
  task(detail::graph_node* n, std::uint64_t serial) noexcept : node_(n), serial_(serial) {}

  [[nodiscard]] detail::graph_node& node() const {
    if (node_ == nullptr) {
      throw graph_error(
          "weft::task: the handle is empty (default-constructed); use the task that "
          "graph::emplace or graph::placeholder returned");
    }
#ifndef NDEBUG
    if (!detail::graph_alive(serial_)) {
      throw graph_error(
          "weft::task: the handle outlived its graph; keep the graph alive as long as its "
          "tasks are used");
    }
#endif
    return *node_;
  }

  detail::graph_node* node_ = nullptr;
  [[maybe_unused]] std::uint64_t serial_ = 0;  // checked without NDEBUG
};

/// Limits how many graph tasks run at once across every graph and pool that
/// uses it (Taskflow's tf::Semaphore): a task that acquires it waits, without
/// holding a worker, while `max_holders` others hold it. Must outlive the
/// runs of the graphs whose tasks use it. See docs/graph.md, "Semaphores".
class semaphore {
 public:
  /// At most max_holders units taken at once; 0 throws usage_error.
  explicit semaphore(std::size_t max_holders);
  semaphore(const semaphore&) = delete;
  semaphore& operator=(const semaphore&) = delete;
  ~semaphore() = default;

  /// Units free now (a snapshot).
  [[nodiscard]] std::size_t available() const;
  /// The units it was made with.
  [[nodiscard]] std::size_t max_holders() const noexcept { return max_; }

 private:
  friend class detail::graph_core;
  // Takes a unit, or queues n to be rescheduled by a release (false).
  bool try_acquire(detail::graph_node* n) noexcept;
  // Gives a unit back; returns the tasks that waited (linked through
  // graph_core::waiter_link), now dequeued, for the caller to reschedule.
  detail::graph_node* release() noexcept;

  const std::size_t max_;
  mutable std::mutex mutex_;
  std::size_t free_;                    // guarded by mutex_
  detail::graph_node* head_ = nullptr;  // waiting tasks, FIFO; guarded by mutex_
  detail::graph_node* tail_ = nullptr;
};

/// A set of tasks and the edges between them, run by pool::run as often as
/// needed, one run at a time. See docs/graph.md.
class graph {
 public:
  graph();
  ~graph();  ///< waits for a run in flight
  /// Takes other's tasks (their handles stay valid); other may then only be
  /// destroyed or assigned to (else graph_error).
  graph(graph&& other) noexcept = default;
  /// Takes other's tasks, as the move constructor does; this graph's own go.
  graph& operator=(graph&& other) noexcept;
  graph(const graph&) = delete;
  graph& operator=(const graph&) = delete;

  /// Adds a task running f(). If f returns an integral type (other than
  /// bool), the task is a condition task: it runs only its successor with
  /// that index (none if out of range or negative). If f returns a range of
  /// them (a std::vector<int>, a std::array, ...), it is a multi-condition
  /// task: it runs each successor listed, once however often listed, and
  /// none for an empty range (docs/graph.md, "Conditional tasks").
  template <class F>
  task emplace(F&& f) {
    using C = std::decay_t<F>;
    if constexpr (detail::valid_task<C>()) {
      using R = detail::task_result_t<C>;
      detail::graph_core& c = core("emplace a task into");
      return task{c.add_node<C, R>(detail::kind_for<R>(), std::forward<F>(f)), c.serial};
    }
    return task{};
  }
  /// An empty task, to join task groups (a barrier between them).
  task emplace() { return placeholder(); }
  /// The same as emplace().
  task placeholder();
  /// Adds `other` as one task (a module) that runs it to completion on the
  /// same pool. `other` must outlive this graph's runs and must not be run
  /// elsewhere meanwhile.
  task compose(graph& other);

  /// Room for n more tasks in one block of storage.
  void reserve(std::size_t n) { core("reserve").reserve(n); }
  /// Tasks in the graph.
  [[nodiscard]] std::size_t size() const noexcept { return core_ ? core_->size() : 0; }
  /// True when the graph has no task.
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }
  /// True from pool::run until the future of its last queued run is ready.
  [[nodiscard]] bool running() const noexcept { return core_ && core_->running(); }
  /// Cancels the run in flight and every queued run (as their futures'
  /// cancel() would): tasks that have not started are skipped, and the
  /// futures throw run_cancelled. False if no run was in flight or queued.
  bool cancel() noexcept { return core_ && core_->cancel(); }

  /// Writes the graph in GraphViz DOT: task names as labels, condition tasks
  /// as diamonds, conditional edges dashed and labelled with their index.
  void dump(std::ostream& out) const;

 private:
  friend class pool;
  friend class detail::graph_core;
  detail::graph_core& core(const char* what) const;

  std::unique_ptr<detail::graph_core> core_;
};

/// What a subflow task's callable receives: a child graph it builds while it
/// runs (Taskflow's dynamic tasking), emptied before each run of the task.
/// Once the callable returns, the child graph runs on the same pool; the
/// task's successors run after it has finished, and no worker waits for it
/// meanwhile. After detach(), the successors run at once and the child
/// finishes on its own, but the parent run still ends only after it. An
/// exception in the child fails the parent run (its future rethrows it);
/// cancelling the parent run skips the child's tasks that have not started.
/// Its tasks may take a subflow& in turn (nested subflows). docs/graph.md,
/// "Subflows".
class subflow {
 public:
  subflow(const subflow&) = delete;
  subflow& operator=(const subflow&) = delete;
  subflow(subflow&&) = delete;
  subflow& operator=(subflow&&) = delete;
  ~subflow() = default;

  /// Adds a task to the child graph, as graph::emplace does.
  template <class F>
  task emplace(F&& f) {
    return graph_.emplace(std::forward<F>(f));
  }
  /// An empty task of the child graph (a barrier), as graph::placeholder.
  task placeholder() { return graph_.placeholder(); }
  /// Adds `other` as one task of the child graph, as graph::compose.
  task compose(graph& other) { return graph_.compose(other); }
  /// Room for n more tasks.
  void reserve(std::size_t n) { graph_.reserve(n); }
  /// Tasks in the child graph so far.
  [[nodiscard]] std::size_t size() const noexcept { return graph_.size(); }
  /// The task's successors need not wait for this subflow (the parent run
  /// still does).
  void detach() noexcept { detached_ = true; }
  /// Whether detach() was called in this execution of the task.
  [[nodiscard]] bool detached() const noexcept { return detached_; }

 private:
  friend struct detail::subflow_slot;
  friend class detail::graph_core;
  subflow() = default;

  graph graph_;
  bool detached_ = false;
};

}  // namespace weft
