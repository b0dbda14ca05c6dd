// A graph's body (weft/graph.hpp): graph_core, which owns the tasks and
// runs them, and the state a run shares with its future. Included by
// weft/graph.hpp; the definitions are in src/graph/.
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

#include "../future.hpp"
#include "../pool.hpp"
#include "graph_node.hpp"
#include "job.hpp"

namespace weft {
namespace detail {

// The state a run shares with its future. One per graph, reused by the next
// run once its future is gone, so a rerun allocates nothing.
struct run_state final : future_state<void> {
  // status bits: a cancel was requested; a task threw; the run finished;
  // the future was dropped unread.
  static constexpr unsigned cancel_bit = 1;
  static constexpr unsigned failed_bit = 2;
  static constexpr unsigned finished_bit = 4;
  static constexpr unsigned dropped_bit = 8;
  static constexpr unsigned stop_mask = cancel_bit | failed_bit;

  // Weights in `refs`: the future drops 1 (future_state::drop), and so does
  // the graph; the run drops 2. So the count tells who is left: 3 means the
  // graph and a run about to let go (its future is gone), 1 the graph alone.
  static constexpr int graph_ref = 1;
  static constexpr int future_ref = 1;
  static constexpr int run_ref = 2;

  // True if the request came before the run finished; the run's future then
  // throws run_cancelled (unless a task threw first).
  static bool request_cancel(future_state<void>* s) noexcept {
    // acq_rel: ordered with finish_run()'s fetch_or in the status word's
    // modification order, which decides whether the run saw the request.
    const unsigned old =
        static_cast<run_state*>(s)->status.fetch_or(cancel_bit, std::memory_order_acq_rel);
    return (old & finished_bit) == 0;
  }

  // The future is dropped unread. Whichever of this and finish_run() comes
  // second in the status word's order deals with the run's exception: the
  // run reports it to the pool's error path (the future went first); here
  // it is printed if a task threw, and dropped silently if the run was only
  // cancelled (a cancel the user asked for is no error).
  static bool on_dropped(future_state<void>* s) noexcept;

  std::atomic<unsigned> status{0};
  // A sequence (pool::run_n, pool::run_until) is one state run again and
  // again: the runs still to come after this one (run_n), or the predicate
  // that ends it when it returns true (run_until).
  std::size_t repeats = 0;
  std::function<bool()> until;
  // The run queued after this one (graph_core's queue, under its mutex).
  run_state* next_queued = nullptr;
  // The graph it runs, as its tasks mark their running_scope.
  const void* graph = nullptr;
};

// Registry of live graphs, consulted by task handles in builds without
// NDEBUG to report a handle that outlived its graph.
bool graph_alive(std::uint64_t serial) noexcept;

// A graph's body. It stays at one address for the graph's life (graph moves
// move the pointer), so task handles and nodes can point at it.
class graph_core {
 public:
  graph_core();
  graph_core(const graph_core&) = delete;
  graph_core& operator=(const graph_core&) = delete;
  ~graph_core();

  template <class C, class R, class F>
  graph_node* add_node(node_kind k, F&& f) {
    check_idle("add a task to");
    graph_node* n = make_node(k);
    return enlist(n, [&] {
      if (k == node_kind::subflow) make_subflow_slot(n);
      store_callable<C, R>(n, std::forward<F>(f));
    });
  }
  // Completes n, just made, with fill() and adds it to the graph as a source;
  // if that throws, n is destroyed and the graph is as it was.
  template <class Fill>
  graph_node* enlist(graph_node* n, Fill&& fill) {
    try {
      fill();
      sources_.push_back(n);
    } catch (...) {
      n->~graph_node();
      throw;
    }
    added(n);
    return n;
  }
  graph_node* add_placeholder();
  graph_node* add_module(graph& other);
  // task::work: n's callable becomes f (its kind follows f's result).
  template <class C, class R, class F>
  void set_work(graph_node* n, node_kind k, F&& f) {
    check_idle("give work to a task of");
    check_not_module(n);
    if (k == node_kind::subflow) make_subflow_slot(n);
    if (n->destroy != nullptr) n->destroy(n);
    n->destroy = nullptr;
    set_call(n, nullptr);
    retype(n, node_kind::placeholder);  // what n is should the next step throw
    store_callable<C, R>(n, std::forward<F>(f));
    set_call(n, n->call);  // behind synced_call, if n has semaphores
    retype(n, k);
  }

  // task::acquire / task::release: s joins n's list.
  void add_sync(graph_node* n, semaphore& s, bool acquire);
  // The link of a synced task in the queue of the semaphore it waits on.
  static graph_node*& waiter_link(graph_node* n) noexcept {
    return n->owner->syncs_[n->index]->next_waiter;
  }

  void link(graph_node* from, graph_node* to);
  // Removes one edge from -> to; graph_error if there is none.
  void unlink(graph_node* from, graph_node* to);
  void set_name(graph_node* n, std::string_view name);
  // The task's name; empty if it has none.
  [[nodiscard]] std::string_view name_of(const graph_node* n) const noexcept {
    return n->index < names_.size() ? std::string_view{names_[n->index]} : std::string_view{};
  }
  void reserve(std::size_t n) { nodes_.reserve(n); }
  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }
  [[nodiscard]] bool running() const noexcept {
    // Acquire pairs with the release decrement in release_turn(): once
    // zero, the last run's effects are visible.
    return runs_.load(std::memory_order_acquire) != 0;
  }
  // Cancels the run in flight and every queued run.
  bool cancel() noexcept;
  void dump(std::ostream& out) const;
  [[nodiscard]] unsigned run_epoch() const noexcept { return run_epoch_; }

  // begin_subflow() and end_subflow() (src/graph/build.cpp).
  static subflow& begin_subflow_of(graph_node* n);
  static std::size_t end_subflow_of(graph_node* n);

  // pool::run's half (run_n, run_until: `runs` runs, or until `until`
  // returns true): starts the run, or queues it behind the runs in flight.
  run_state* start(pool& p, std::size_t runs = 1, std::function<bool()> until = {});

  const std::uint64_t serial;

 private:
  graph_node* make_node(node_kind k) {
    void* slot = nodes_.allocate();
    auto* n = ::new (slot) graph_node(this, k, static_cast<std::uint32_t>(nodes_.size()));
    n->run = &run_node;
    return n;
  }
  // Counts a node constructed by make_node and already listed in sources_.
  void added(graph_node* n) noexcept {
    n->source_slot = static_cast<std::uint32_t>(sources_.size() - 1);
    if (n->destroy != nullptr) trivial_nodes_ = false;
    if (chooses(n->kind)) has_conditions_ = true;
    nodes_.commit();
    dirty_ = true;
  }
  void check_idle(const char* what) const;
  static void check_not_module(const graph_node* n);
  // A subflow task's child graph and resume job (subflows_), made when the
  // task is added.
  void make_subflow_slot(graph_node* n);
  friend struct subflow_slot;
  // The job a subflow's end queues to release its task's successors.
  static void resume_subflow(job* j) noexcept;
  // release_successors() for subflow_choice: the task has returned; if its
  // subflow has ended too, its successors are released here.
  template <bool Traced>
  graph_node* subflow_returned(graph_node* n, const task_trace* t) noexcept;
  // finish_run() for a subflow's run: its outcome goes to the parent run.
  void finish_subflow_run(run_state* s) noexcept;
  // n becomes a task of kind k: its out-edges turn conditional or normal
  // with it (its successors' counts follow).
  void retype(graph_node* n, node_kind k) noexcept;
  void check_cycles();
  [[noreturn]] void report_cycle(const std::vector<std::uint32_t>& remaining_in);
  run_state* fresh_state();
  // A state for a queued run, or for a run whose graph's own state is
  // still held by a future: a spare whose run and future are gone, or a
  // new one, marked taken. Under queue_mutex_.
  run_state* spare_state();
  void init_state(run_state* s, pool& p, unsigned epoch, std::size_t runs,
                  std::function<bool()>& until) noexcept;
  // start() when the graph already has a run: queues this one (or runs it,
  // if the turn fell free meanwhile).
  run_state* enqueue(pool& p, std::size_t runs, std::function<bool()>& until);
  // Whether the calling thread runs one of this graph's tasks (maybe
  // beneath a helping wait): a run it queued could never start.
  [[nodiscard]] bool inside_own_task() const noexcept;
  // The holder of the turn (the right to run) is done with it: the next
  // queued run, which now holds it, or nullptr (none queued: the graph is
  // idle, or an enqueue in progress takes the turn).
  run_state* release_turn() noexcept;
  // An enqueue that failed gives back its place in runs_.
  void abandon_enqueue() noexcept;
  // With the turn: starts the run of s (sets it up, queues its sources).
  // `guarded`: the caller is not s's submitter, so the pushes count as
  // submissions of their own (scheduler::publish_guarded).
  void launch(run_state* s, bool guarded) noexcept;
  // launch()'s second half: queues the sources of the prepared run on p.
  void launch_prepared(pool& p, bool guarded) noexcept;
  // launch()'s first half: false if the run has no task to queue (it is
  // over as soon as it starts).
  bool prepare_run(run_state* s) noexcept;
  // Whether the run of current_ that just ended starts again (a sequence
  // not over); reports a throwing predicate as the run's error.
  bool run_again(run_state* s) noexcept;

  static void run_node(job* j) noexcept;
  graph_node* step(graph_node* n) noexcept;
  // step()'s second half when the pool is traced: the task's slice and the
  // edges it releases go to the trace (docs/tracing.md).
  graph_node* traced_step(graph_node* n) noexcept;
  std::size_t call(graph_node* n) noexcept;
  // The `call` of a task with semaphores: its own callable between
  // acquiring and releasing them; waiting_choice if it had to wait.
  static std::size_t synced_call(graph_node* n);
  // Sets n's callable, behind synced_call if n has semaphores.
  void set_call(graph_node* n, std::size_t (*f)(graph_node*)) noexcept;
  // Before a synced task runs: takes a unit of each semaphore it acquires,
  // or none and queues it on the first that has none left (false: it runs
  // once a release reschedules it).
  bool acquire_all(graph_node* n) noexcept;
  // Reschedules the tasks a semaphore release dequeued, each on its own
  // graph's pool (they may belong to other graphs).
  static void wake(graph_node* chain) noexcept;
  // Traced: each successor made ready is recorded as an edge of `t`.
  template <bool Traced>
  graph_node* release_successors(graph_node* n, bool skip, std::size_t choice,
                                 const task_trace* t) noexcept;
  // release_successors() for a multi-condition task: its chosen_branches.
  template <bool Traced>
  graph_node* release_chosen(graph_node* n, const task_trace* t) noexcept;
  // Queues ready tasks for stealing (push_many), or runs them here if the
  // queue cannot grow.
  void publish(job* const* ready, std::size_t n) noexcept;
  void retire(std::size_t units) noexcept;
  void finish_run() noexcept;
  void fail(std::exception_ptr error) noexcept;
  [[nodiscard]] bool stopping() const noexcept {
    // Relaxed: a stop request only has to be seen eventually; tasks that
    // start before they see it run normally.
    if ((current_->status.load(std::memory_order_relaxed) & run_state::stop_mask) != 0) {
      return true;
    }
    // A subflow stops with the run of the task that made it.
    return parent_ != nullptr && parent_->stopping();
  }

  // Written by start() before the sources are pushed (the push publishes
  // them), read by the run's tasks.
  pool* pool_ = nullptr;
  run_state* current_ = nullptr;
  unsigned run_epoch_ = 0;  // the run's epoch parity in pool_ (pool::wait)
  bool traced_ = false;     // pool_ records a trace (docs/tracing.md)
  // A subflow's graph: the task that made it, in its parent graph, and
  // whether it was detached (end_subflow()).
  bool detached_ = false;
  graph_core* parent_ = nullptr;
  graph_node* parent_node_ = nullptr;
  // The run graph::cancel() may reach: set by start() once the run is set
  // up, cleared by finish_run() before the state can be reused. Guarded by
  // cancel_mutex_, so that cancel() from any thread at any time finds either
  // no run or a whole one.
  std::mutex cancel_mutex_;
  run_state* cancellable_ = nullptr;

  // Tasks of the current run that are queued or running; the thread that
  // brings it to zero finishes the run.
  alignas(cache_line) std::atomic<std::size_t> in_flight_{0};
  // Runs started and not finished: the one in flight, the queued ones, and
  // enqueues in progress. The start() that raises it from zero has the turn;
  // the others queue (docs/graph.md, "Queued runs").
  std::atomic<std::size_t> runs_{0};
  // The queue of runs waiting for their turn, in order, linked through
  // run_state::next_queued; turn_free_: the turn was released while an
  // enqueue was in progress, which takes it. Both under queue_mutex_, as is
  // spare_: the states the graph made for queued runs (it holds a
  // reference to each, so the destructor may wait on any of them).
  std::mutex queue_mutex_;
  run_state* queue_head_ = nullptr;
  run_state* queue_tail_ = nullptr;
  bool turn_free_ = false;
  std::vector<run_state*> spare_;
  // How many spares the graph keeps even while their futures hold them
  // (spare_state()).
  static constexpr std::size_t spares_kept = 8;
  std::mutex error_mutex_;
  std::exception_ptr error_;  // first exception of the run, guarded by error_mutex_

  // Builder side: only touched while no run is in flight.
  alignas(cache_line) run_state* state_ = nullptr;  // the graph's reference
  std::vector<graph_node*> sources_;                // tasks without predecessors, kept up to date
  bool dirty_ = false;                              // changed since the last run
  bool has_backward_ = false;  // a normal edge to an older task: a cycle is possible
  bool has_conditions_ = false;
  bool trivial_nodes_ = true;  // no node needs its destructor run
  // Task names by node index (graph_core::name_of), kept out of the nodes,
  // which are two cache lines without them.
  std::vector<std::string> names_;
  // The semaphores of synced tasks, by task index (task::acquire/release),
  // and the link of the semaphore queue the task waits in, if any.
  struct sync_lists {
    std::vector<semaphore*> acquire;
    std::vector<semaphore*> release;
    std::size_t (*inner)(graph_node*) = nullptr;  // the task's own callable
    graph_node* next_waiter = nullptr;            // guarded by the semaphore's mutex
  };
  std::vector<std::unique_ptr<sync_lists>> syncs_;
  // Subflow tasks' slots, by task index (make_subflow_slot()).
  std::vector<std::unique_ptr<subflow_slot>> subflows_;
  node_arena nodes_;
};

}  // namespace detail
}  // namespace weft
