// Building a graph (docs/graph.md): the graphs alive, graph_core's life,
// subflow slots, tasks, edges and names; the graph and semaphore objects
// themselves, and pool::run / run_n / run_until.
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>

#include "internal.hpp"
#include "weft/detail/scheduler.hpp"
#include "weft/graph.hpp"

namespace weft {

namespace detail {

namespace {

// Serials of the graphs alive now (every build registers them, so a debug
// translation unit can ask a release library).
struct graph_registry {
  std::mutex mutex;
  std::unordered_set<std::uint64_t> alive;
  std::uint64_t next = 1;
};

graph_registry& registry() {
  static graph_registry r;
  return r;
}

std::uint64_t register_graph() {
  graph_registry& r = registry();
  std::lock_guard lock{r.mutex};
  const std::uint64_t s = r.next++;
  r.alive.insert(s);
  return s;
}

void unregister_graph(std::uint64_t serial) noexcept {
  graph_registry& r = registry();
  std::lock_guard lock{r.mutex};
  r.alive.erase(serial);
}

}  // namespace

bool graph_alive(std::uint64_t serial) noexcept {
  graph_registry& r = registry();
  std::lock_guard lock{r.mutex};
  return r.alive.count(serial) != 0;
}

// ---------------------------------------------------------------------------
// graph_core: building

graph_core::graph_core() : serial(register_graph()) {}

graph_core::~graph_core() {
  // Destroying a graph with runs in flight or queued: wait for the last of
  // them (helping, on a worker), since their tasks live here. Nothing can
  // queue another now. The graph holds a reference to every state it made,
  // so the one waited on stays valid; a run that ends meanwhile hands the
  // turn on under the mutex, so current_ is the run in flight.
  for (;;) {
    run_state* last = nullptr;
    {
      std::lock_guard lock{queue_mutex_};
      if (!running()) break;
      last = queue_tail_ != nullptr ? queue_tail_ : current_;
    }
    scheduler::await(*last->owner, last->done);
  }
  if (trivial_nodes_) nodes_.skip_destructors();
  release_state(state_);
  for (run_state* s : spare_) release_state(s);
  unregister_graph(serial);
}

void graph_core::check_idle(const char* what) const {
  if (running()) {
    throw graph_error(std::string("weft::graph: cannot ") + what +
                      " a graph while it runs; wait for the run's future first");
  }
}

void graph_core::make_subflow_slot(graph_node* n) {
  if (subflows_.size() <= n->index) subflows_.resize(n->index + 1);
  if (!subflows_[n->index]) subflows_[n->index] = std::make_unique<subflow_slot>(n);
}

subflow& begin_subflow(graph_node* n) { return graph_core::begin_subflow_of(n); }
std::size_t end_subflow(graph_node* n) { return graph_core::end_subflow_of(n); }

subflow& graph_core::begin_subflow_of(graph_node* n) {
  subflow& sf = n->owner->subflows_[n->index]->flow;
  // What the task's last execution built is gone: its run has ended (the
  // task's successors, or its parent run, waited for it; a later execution
  // in the same run of a detached one waits here, in the graph's destructor).
  if (!sf.graph_.empty()) sf.graph_ = graph{};
  sf.detached_ = false;
  return sf;
}

std::size_t graph_core::end_subflow_of(graph_node* n) {
  graph_core& g = *n->owner;
  subflow_slot& slot = *g.subflows_[n->index];
  if (slot.flow.graph_.empty()) return no_choice;  // nothing to wait for
  graph_core& child = *slot.flow.graph_.core_;
  const bool detached = slot.flow.detached_;
  child.parent_ = &g;
  child.parent_node_ = n;
  child.detached_ = detached;
  if (detached) {
    // The parent run waits for the child: one more unit, which the child's
    // end retires. Relaxed: this task holds a unit, so the count cannot
    // reach zero meanwhile; the child's end is published by the pushes.
    g.in_flight_.fetch_add(1, std::memory_order_relaxed);
  } else {
    // Relaxed: published to the child's end by the pushes of its sources.
    slot.arrivals.store(2, std::memory_order_relaxed);
  }
  run_state* s = nullptr;
  try {
    s = child.start(*g.pool_);
  } catch (...) {
    // A cycle in the child, or no memory: the task fails, and the child
    // never ran. Relaxed: as above.
    if (detached) g.in_flight_.fetch_sub(1, std::memory_order_relaxed);
    throw;
  }
  // No future is kept: the child's outcome goes to the parent run.
  release_state(s);
  return detached ? no_choice : subflow_choice;
}

graph_node* graph_core::add_placeholder() {
  check_idle("add a task to");
  return enlist(make_node(node_kind::placeholder), [] {});
}

graph_node* graph_core::add_module(graph& other) {
  check_idle("add a task to");
  if (other.core_.get() == this) {
    throw graph_error("weft::graph::compose: a graph cannot contain itself");
  }
  if (!other.core_) {
    throw graph_error("weft::graph::compose: the graph to compose is moved from");
  }
  graph* target = &other;
  auto run_module = [target, this] { pool_->run(*target).get(); };
  return add_node<decltype(run_module), void>(node_kind::module, std::move(run_module));
}

void graph_core::link(graph_node* from, graph_node* to) {
  if (from->owner != to->owner) {
    throw graph_error(
        "weft::task::precede/succeed: the two tasks belong to different graphs; an edge can "
        "only join tasks of one graph (compose one graph into the other instead)");
  }
  check_idle("add an edge to");
  from->successors.push_back(to);  // first: the only step that can throw
  if (from->successors.on_heap()) trivial_nodes_ = false;
  if (to->strong == 0 && to->weak == 0) {
    // No longer a source: swap the last source into its slot.
    graph_node* last = sources_.back();
    sources_[to->source_slot] = last;
    last->source_slot = to->source_slot;
    sources_.pop_back();
    to->source_slot = graph_node::no_slot;
  }
  if (!chooses(from->kind) && from->index >= to->index) has_backward_ = true;
  if (chooses(from->kind)) {
    ++to->weak;
  } else {
    ++to->strong;
    // Relaxed: no run is in flight; the next run's start publishes it.
    to->pending.store(to->strong, std::memory_order_relaxed);
  }
  dirty_ = true;
}

void graph_core::unlink(graph_node* from, graph_node* to) {
  if (from->owner != to->owner) {
    throw graph_error(
        "weft::task::remove_successor: the two tasks belong to different graphs, so no edge "
        "joins them");
  }
  check_idle("remove an edge from");
  if (!from->successors.erase(to)) {
    const std::string a{task_label(from)};
    const std::string b{task_label(to)};
    throw graph_error("weft::task::remove_successor: there is no edge from " + a + " to " + b +
                      "; remove only edges that precede or succeed added");
  }
  if (chooses(from->kind)) {
    --to->weak;
  } else {
    --to->strong;
    // Relaxed: no run is in flight; the next run's start publishes it.
    to->pending.store(to->strong, std::memory_order_relaxed);
  }
  if (to->strong == 0 && to->weak == 0) {
    // A source again. Cannot fail: sources_ kept the capacity it had when
    // `to` was a source before (every task starts as one).
    to->source_slot = static_cast<std::uint32_t>(sources_.size());
    sources_.push_back(to);
  }
  dirty_ = true;
}

void graph_core::check_not_module(const graph_node* n) {
  if (n->kind != node_kind::module) return;
  throw graph_error(
      "weft::task::work: a composed task (graph::compose) runs its graph and cannot be given "
      "other work; emplace a new task instead");
}

void graph_core::retype(graph_node* n, node_kind k) noexcept {
  const bool was = chooses(n->kind);
  const bool now = chooses(k);
  n->kind = k;
  if (n->destroy != nullptr) trivial_nodes_ = false;
  if (now) has_conditions_ = true;
  if (was != now) {
    // Its edges change kind with it: a successor counts normal
    // predecessors only.
    for (graph_node* s : n->successors) {
      if (now) {
        --s->strong;
        ++s->weak;
      } else {
        ++s->strong;
        --s->weak;
        if (n->index >= s->index) has_backward_ = true;
      }
      // Relaxed: no run is in flight; the next run's start publishes it.
      s->pending.store(s->strong, std::memory_order_relaxed);
    }
  }
  dirty_ = true;
}

void graph_core::set_name(graph_node* n, std::string_view name) {
  check_idle("rename a task of");
  if (names_.size() <= n->index) names_.resize(n->index + 1);
  names_[n->index] = name;
}

}  // namespace detail

// ---------------------------------------------------------------------------
// graph, task, pool::run

graph::graph() : core_(std::make_unique<detail::graph_core>()) {}

graph::~graph() = default;

graph& graph::operator=(graph&& other) noexcept {
  if (this != &other) core_ = std::move(other.core_);
  return *this;
}

detail::graph_core& graph::core(const char* what) const {
  if (!core_) {
    throw graph_error(std::string("weft::graph: cannot ") + what +
                      " a moved-from graph; use the graph it was moved to");
  }
  return *core_;
}

task graph::placeholder() {
  detail::graph_core& c = core("add a task to");
  return task{c.add_placeholder(), c.serial};
}

task graph::compose(graph& other) {
  detail::graph_core& c = core("compose into");
  return task{c.add_module(other), c.serial};
}

void graph::dump(std::ostream& out) const { core("dump").dump(out); }

future<void> pool::run(graph& g) {
  detail::graph_core& c = g.core("run");
  return future<void>(c.start(*this));
}

future<void> pool::run_n(graph& g, std::size_t n) {
  detail::graph_core& c = g.core("run");
  if (n == 0) return submit([] {});
  return future<void>(c.start(*this, n));
}

future<void> pool::run_until(graph& g, std::function<bool()> pred) {
  if (!pred) {
    throw usage_error(
        "weft::pool::run_until: the predicate is empty; pass a callable that returns true when "
        "the runs should stop");
  }
  detail::graph_core& c = g.core("run");
  return future<void>(c.start(*this, 1, std::move(pred)));
}

// ---------------------------------------------------------------------------
// semaphore

semaphore::semaphore(std::size_t max_holders) : max_(max_holders), free_(max_holders) {
  if (max_holders == 0) {
    throw usage_error(
        "weft::semaphore: max_holders is 0, so every task that acquires it would wait "
        "forever; allow at least 1");
  }
}

std::size_t semaphore::available() const {
  std::lock_guard lock{mutex_};
  return free_;
}

}  // namespace weft
