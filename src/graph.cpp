#include "weft/graph.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <ostream>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "weft/detail/platform.hpp"
#include "weft/detail/scheduler.hpp"
#include "weft/detail/trace.hpp"

namespace weft {

namespace detail {

thread_local std::vector<std::uint32_t> chosen_branches;  // graph.hpp

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

void destroy_state(future_state<void>* s) noexcept { delete static_cast<run_state*>(s); }

// Lets go of the graph's reference to a run state it no longer uses.
void release_state(run_state* s) noexcept {
  if (s == nullptr || !s->drop()) return;
  // Last owner: the run has finished and its future is gone. An error that
  // nobody took can only be printed now.
  if (s->error) report_unretrieved(s->error);
  destroy_state(s);
}

std::string task_label(const graph_node* n) {
  if (const std::string_view name = n->owner->name_of(n); !name.empty()) return std::string{name};
  std::string label(1, '#');
  label += std::to_string(n->index);
  return label;
}

void write_dot_string(std::ostream& out, std::string_view s) {
  out << '"';
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out << '\\' << c;
    } else if (c == '\n') {
      out << "\\n";
    } else {
      out << c;
    }
  }
  out << '"';
}

}  // namespace

bool graph_alive(std::uint64_t serial) noexcept {
  graph_registry& r = registry();
  std::lock_guard lock{r.mutex};
  return r.alive.count(serial) != 0;
}

// ---------------------------------------------------------------------------
// node_arena

node_arena::~node_arena() {
  if (destroy_nodes_) for_each([](graph_node* n) { n->~graph_node(); });
  for (const chunk& c : chunks_) detail::platform::aligned_free(c.first);
}

void node_arena::grow(std::size_t at_least) {
  constexpr std::size_t first_chunk = 64;
  constexpr std::size_t largest_chunk = 65536;
  std::size_t n =
      chunks_.empty() ? first_chunk : std::min(chunks_.back().capacity * 2, largest_chunk);
  n = std::max(n, at_least);
  chunks_.reserve(chunks_.size() + 1);
  // Big chunks are aligned to, and asked to be backed by, 2 MiB pages: a
  // graph of millions of tasks then costs a few hundred page faults instead
  // of hundreds of thousands (where the kernel allows it).
  constexpr std::size_t huge_page = std::size_t{2} << 20;
  std::size_t bytes = n * sizeof(graph_node);
  const std::size_t alignment = bytes >= huge_page ? huge_page : cache_line;
  bytes = (bytes + alignment - 1) / alignment * alignment;
  void* memory = detail::platform::aligned_allocate(alignment, bytes, alignment == huge_page);
  if (memory == nullptr) throw std::bad_alloc();
  auto* first = static_cast<graph_node*>(memory);
  if (!chunks_.empty()) {
    chunks_.back().used = static_cast<std::size_t>(next_ - chunks_.back().first);
  }
  chunks_.push_back(chunk{first, n, 0});
  next_ = first;
  end_ = first + n;
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

// A subflow task's own state: the child graph its callable builds, and the
// job that releases the task's successors once the child has finished
// (queued by the child's run, so no worker waits for it).
struct subflow_slot : job {
  explicit subflow_slot(graph_node* n) noexcept : job{&graph_core::resume_subflow}, node(n) {}
  subflow flow;
  graph_node* const node;
  // Of a joined subflow: the task's return and the child's end, each
  // counting one off; whoever comes second releases the successors.
  std::atomic<std::uint32_t> arrivals{0};
};

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

template <bool Traced>
graph_node* graph_core::subflow_returned(graph_node* n, const task_trace* t) noexcept {
  subflow_slot& slot = *subflows_[n->index];
  // acq_rel: pairs with the child's end (finish_subflow_run()); the second
  // to arrive sees the first's work.
  if (slot.arrivals.fetch_sub(1, std::memory_order_acq_rel) != 1) return nullptr;
  return release_successors<Traced>(n, false, no_choice, t);
}

void graph_core::resume_subflow(job* j) noexcept {
  graph_node* n = static_cast<subflow_slot*>(j)->node;
  graph_core& g = *n->owner;
  const running_scope running{g.pool_, g.run_epoch_, &g};
  for (graph_node* next = g.release_successors<false>(n, false, no_choice, nullptr);
       next != nullptr;) {
    next = g.step(next);
  }
}

void graph_core::finish_subflow_run(run_state* s) noexcept {
  // Read before the child lets go of its turn: from then on its graph may
  // be replaced (the parent's next execution of the task) or destroyed.
  graph_core& parent = *parent_;
  graph_node* const node = parent_node_;
  const bool detached = detached_;
  pool* p = pool_;
  const unsigned epoch = run_epoch_;
  std::exception_ptr error = std::exchange(error_, nullptr);
  {
    std::lock_guard lock{cancel_mutex_};
    cancellable_ = nullptr;
  }
  // acq_rel: as in finish_run(); nobody holds a future of it.
  s->status.fetch_or(run_state::finished_bit, std::memory_order_acq_rel);
  s->value.emplace();
  (void)release_turn();  // a subflow's graph has no queue
  s->done.set();
  // acq_rel: as in future_state::drop().
  if (s->refs.fetch_sub(run_state::run_ref, std::memory_order_acq_rel) == run_state::run_ref) {
    destroy_state(s);
  }
  // The parent run holds a unit for the task or for the detached child:
  // it is alive until the lines below hand it on.
  if (error) parent.fail(std::move(error));
  if (detached) {
    parent.retire(1);
  } else {
    subflow_slot& slot = *parent.subflows_[node->index];
    // acq_rel: as in subflow_returned().
    if (slot.arrivals.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      job* j = &slot;
      parent.publish(&j, 1);
    }
  }
  scheduler::leave(*p, epoch);  // last: the pool may be destroyed once its count is zero
}

graph_node* graph_core::add_placeholder() {
  check_idle("add a task to");
  graph_node* n = make_node(node_kind::placeholder);
  try {
    sources_.push_back(n);
  } catch (...) {
    n->~graph_node();
    throw;
  }
  added(n);
  return n;
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

bool graph_core::cancel() noexcept {
  // Any thread, at any time: the mutexes make start(), release_turn() and
  // finish_run() publish and withdraw runs as a whole (queue first, as in
  // release_turn()).
  std::lock_guard queue_lock{queue_mutex_};
  bool cancelled = false;
  {
    std::lock_guard lock{cancel_mutex_};
    cancelled = cancellable_ != nullptr && run_state::request_cancel(cancellable_);
  }
  for (run_state* s = queue_head_; s != nullptr; s = s->next_queued) {
    cancelled = run_state::request_cancel(s) || cancelled;
  }
  return cancelled;
}

bool run_state::on_dropped(future_state<void>* base) noexcept {
  auto* s = static_cast<run_state*>(base);
  // acq_rel: ordered against finish_run()'s fetch_or in the status word;
  // acquire makes the run's write of the error visible when it finished
  // first.
  const unsigned old = s->status.fetch_or(dropped_bit, std::memory_order_acq_rel);
  if ((old & finished_bit) == 0) return false;  // the run reports it
  // The run went first: it stores its outcome and sets the latch a few
  // instructions later; its release there makes the error visible.
  while (!s->done.is_set()) std::this_thread::yield();
  if (s->error && (old & failed_bit) != 0) report_unretrieved(s->error);
  s->error = nullptr;
  return true;
}

// ---------------------------------------------------------------------------
// graph_core: checking before a run

void graph_core::check_cycles() {
  // Kahn's algorithm over the normal edges: whatever is left has a normal
  // predecessor that is left too, so it is on a cycle or after one.
  const std::size_t n = nodes_.size();
  std::vector<std::uint32_t> remaining_in(n);
  std::vector<graph_node*> ready;
  nodes_.for_each([&](graph_node* node) {
    remaining_in[node->index] = node->strong;
    if (node->strong == 0) ready.push_back(node);
  });
  std::size_t ordered = 0;
  while (!ready.empty()) {
    graph_node* node = ready.back();
    ready.pop_back();
    ++ordered;
    if (chooses(node->kind)) continue;
    for (graph_node* s : node->successors) {
      if (--remaining_in[s->index] == 0) ready.push_back(s);
    }
  }
  if (ordered != n) report_cycle(remaining_in);
}

void graph_core::report_cycle(const std::vector<std::uint32_t>& remaining_in) {
  // Each task left over has a normal predecessor left over: walking from
  // predecessor to predecessor must come back to a task already seen.
  std::vector<graph_node*> pred(remaining_in.size(), nullptr);
  graph_node* start = nullptr;
  nodes_.for_each([&](graph_node* node) {
    if (remaining_in[node->index] == 0 || chooses(node->kind)) return;
    for (graph_node* s : node->successors) {
      if (remaining_in[s->index] != 0) pred[s->index] = node;
    }
  });
  nodes_.for_each([&](graph_node* node) {
    if (start == nullptr && remaining_in[node->index] != 0) start = node;
  });
  std::vector<std::size_t> seen_at(remaining_in.size(), static_cast<std::size_t>(-1));
  std::vector<graph_node*> walk;
  graph_node* at = start;
  while (seen_at[at->index] == static_cast<std::size_t>(-1)) {
    seen_at[at->index] = walk.size();
    walk.push_back(at);
    at = pred[at->index];
  }
  // walk[seen_at[at]..] is the cycle, backwards.
  std::vector<graph_node*> cycle(walk.begin() + static_cast<std::ptrdiff_t>(seen_at[at->index]),
                                 walk.end());
  std::reverse(cycle.begin(), cycle.end());
  // Start from the task added first, so the report does not depend on the walk.
  std::rotate(cycle.begin(),
              std::min_element(
                  cycle.begin(), cycle.end(),
                  [](const graph_node* x, const graph_node* y) { return x->index < y->index; }),
              cycle.end());
  std::string path;
  for (const graph_node* node : cycle) path += task_label(node) + " -> ";
  path += task_label(cycle.front());
  throw graph_error("weft::graph: cycle among normal edges: " + path +
                    "; remove an edge, or make the loop go through a condition task");
}

// ---------------------------------------------------------------------------
// graph_core: running

namespace {

// Makes a state the graph alone holds (its run and future gone) new again.
void recycle(run_state* s) noexcept {
  if (s->error) report_unretrieved(s->error);
  std::destroy_at(s);
  std::construct_at(s);
  // Relaxed: nobody else holds the state yet; init_state() adds the
  // future's and the run's references once the run is sure to start.
  s->refs.store(run_state::graph_ref, std::memory_order_relaxed);
}

}  // namespace

run_state* graph_core::fresh_state() {
  run_state* s = state_;
  if (s != nullptr) {
    // Acquire pairs with the acq_rel drops of the previous run and of its
    // future: once we are the only owner, their last accesses are done.
    int refs = s->refs.load(std::memory_order_acquire);
    // The previous run released its turn just before it let go of the
    // state (run_state's reference counting): wait those few instructions.
    while (refs >= run_state::run_ref + run_state::graph_ref) {
      std::this_thread::yield();
      refs = s->refs.load(std::memory_order_acquire);
    }
    if (refs == run_state::graph_ref) {
      recycle(s);
      return s;
    }
    // Its future is still held: take a spare, as a queued run does (one
    // left by an earlier queue is free by now, typically).
    std::lock_guard lock{queue_mutex_};
    return spare_state();
  }
  s = new run_state;
  // Relaxed: as in recycle().
  s->refs.store(run_state::graph_ref, std::memory_order_relaxed);
  state_ = s;
  return s;
}

run_state* graph_core::spare_state() {
  // The state returned is marked taken (the references of a run and its
  // future) before the mutex is released, so that no other start() takes
  // it before its own init_state(). Relaxed: every reader of a spare's
  // count for this purpose holds the mutex.
  const auto take = [](run_state* s) {
    s->refs.store(run_state::graph_ref + run_state::future_ref + run_state::run_ref,
                  std::memory_order_relaxed);
    return s;
  };
  for (auto it = spare_.begin(); it != spare_.end();) {
    run_state* s = *it;
    // Acquire: as in fresh_state().
    int refs = s->refs.load(std::memory_order_acquire);
    // A run that has set its future lets go of the state a few
    // instructions later (as in fresh_state()): wait for that.
    while (refs >= run_state::graph_ref + run_state::run_ref && s->done.is_set()) {
      std::this_thread::yield();
      refs = s->refs.load(std::memory_order_acquire);
    }
    if (refs == run_state::graph_ref) {
      recycle(s);
      return take(s);
    }
    if (refs == run_state::graph_ref + run_state::future_ref && spare_.size() > spares_kept) {
      // Its run is over and only its future holds it, and the graph already
      // keeps many states: let the future have it, so that a caller who
      // keeps thousands of futures does not make every enqueue scan them.
      // Below that, it stays a spare, free again once its future is gone:
      // a caller who holds a finished run's future while it starts the next
      // must not cost the graph a state each time (tests/stress,
      // a_held_future_does_not_cost_the_graph_a_state).
      it = spare_.erase(it);
      release_state(s);
      continue;
    }
    ++it;
  }
  spare_.reserve(spare_.size() + 1);
  auto* s = new run_state;
  spare_.push_back(s);
  return take(s);
}

void graph_core::init_state(run_state* s, pool& p, unsigned epoch, std::size_t runs,
                            std::function<bool()>& until) noexcept {
  s->run = nullptr;  // the state is never queued: the graph's tasks are
  s->destroy = &destroy_state;
  s->cancel = &run_state::request_cancel;  // future<void>::cancel() reaches the run
  s->graph = this;                         // future<void>::wait() refuses a wait from our own tasks
  s->dropped = &run_state::on_dropped;
  s->owner = &p;
  s->owner_life = scheduler::life(p);
  s->epoch = epoch;
  s->repeats = runs - 1;
  s->until = std::move(until);
  s->next_queued = nullptr;
  // Relaxed: the state is published with the future, and to the tasks by
  // the pushes of the sources (or by queue_mutex_, queued).
  s->refs.store(run_state::graph_ref + run_state::future_ref + run_state::run_ref,
                std::memory_order_relaxed);
}

run_state* graph_core::start(pool& p, std::size_t runs, std::function<bool()> until) {
  // Acquire pairs with the release decrement in release_turn(): the
  // previous run's tasks, including their counter resets, are visible.
  if (runs_.fetch_add(1, std::memory_order_acquire) != 0) return enqueue(p, runs, until);
  run_state* s = nullptr;
  scheduler::ticket t{};
  try {
    // Without a normal edge to an older task, the order of creation is a
    // topological order: no cycle is possible.
    if (dirty_ && has_backward_) check_cycles();
    dirty_ = false;
    s = fresh_state();
    t = scheduler::enter(p).ticket;
  } catch (...) {
    // A state taken for this run is free again. Release pairs with the
    // acquire loads in fresh_state() and spare_state().
    if (s != nullptr) s->refs.store(run_state::graph_ref, std::memory_order_release);
    // The turn goes on: a run queued meanwhile starts now.
    if (run_state* next = release_turn()) launch(next, true);
    throw;
  }
  // Destroyed last: the caller's last touch of the pool, if it is not a
  // worker (the run may finish, and the pool go, as soon as the last source
  // is pushed).
  const scheduler::submission_guard guard{p, t};
  init_state(s, p, t.epoch, runs, until);
  current_ = s;
  launch(s, false);
  return s;
}

bool graph_core::inside_own_task() const noexcept { return running_scope::inside(this); }

// A run that has not finished is the graph's current run or one queued after
// it, so a task of the graph waiting for it would wait for itself.
bool inside_own_run(const future_state<void>* s) noexcept {
  return running_scope::inside(static_cast<const run_state*>(s)->graph);
}

run_state* graph_core::enqueue(pool& p, std::size_t runs, std::function<bool()>& until) {
  if (inside_own_task()) {
    abandon_enqueue();
    throw graph_error(
        "weft::pool::run: a task of the graph runs the graph again, but that run could only "
        "start after the task's own run has finished; repeat the graph with pool.run_n or "
        "pool.run_until, or loop with a condition task");
  }
  scheduler::ticket t{};
  try {
    t = scheduler::enter(p).ticket;
  } catch (...) {
    abandon_enqueue();
    throw;
  }
  const scheduler::submission_guard guard{p, t};  // destroyed last, as in start()
  run_state* s = nullptr;
  bool turn = false;
  {
    std::unique_lock lock{queue_mutex_};
    try {
      s = spare_state();
    } catch (...) {
      lock.unlock();
      scheduler::leave(p, t.epoch);
      abandon_enqueue();
      throw;
    }
    init_state(s, p, t.epoch, runs, until);
    if (turn_free_) {
      // The run in flight ended while we came here: ours starts now.
      turn_free_ = false;
      turn = true;
      current_ = s;
    } else if (queue_tail_ != nullptr) {
      queue_tail_->next_queued = s;
      queue_tail_ = s;
    } else {
      queue_head_ = queue_tail_ = s;
    }
  }
  if (turn) launch(s, false);
  return s;
}

run_state* graph_core::release_turn() noexcept {
  // acq_rel: release pairs with the acquire in start() and running() (this
  // run's tasks and counter resets are visible to whoever sees the graph
  // idle); acquire, with an enqueue's increment (ordered before its lock).
  if (runs_.fetch_sub(1, std::memory_order_acq_rel) == 1) return nullptr;
  std::lock_guard lock{queue_mutex_};
  run_state* next = queue_head_;
  if (next == nullptr) {
    // An enqueue between its increment and its lock: it takes the turn.
    turn_free_ = true;
    return nullptr;
  }
  queue_head_ = next->next_queued;
  if (queue_head_ == nullptr) queue_tail_ = nullptr;
  current_ = next;
  std::lock_guard cancel_lock{cancel_mutex_};
  cancellable_ = next;
  return next;
}

void graph_core::abandon_enqueue() noexcept {
  std::lock_guard lock{queue_mutex_};
  // acq_rel: as in release_turn(). Back to zero: nobody waits for a turn
  // this enqueue would have taken, and the next start() takes it itself.
  if (runs_.fetch_sub(1, std::memory_order_acq_rel) == 1) turn_free_ = false;
}

void graph_core::launch(run_state* s, bool guarded) noexcept {
  if (prepare_run(s)) {
    launch_prepared(*s->owner, guarded);
  } else {
    finish_run();  // nothing to run: it is over already
  }
}

void graph_core::launch_prepared(pool& p, bool guarded) noexcept {
  // Relaxed: each push publishes it to the task it queues.
  // Once the last source is queued the run may finish and the graph change:
  // read nothing of it after that.
  const std::size_t n = sources_.size();
  graph_node* const* const sources = sources_.data();
  guarded = guarded && !scheduler::on_worker_of(p);
  for (std::size_t i = 0; i < n; ++i) {
    job* j = sources[i];
    // A source that cannot be queued (out of memory, or p closing for a
    // guarded push) runs here.
    const std::size_t queued =
        guarded ? scheduler::publish_guarded(p, &j, 1) : scheduler::publish(p, &j, 1);
    if (queued == 0) run_node(j);
  }
}

bool graph_core::prepare_run(run_state* s) noexcept {
  pool& p = *s->owner;
  pool_ = &p;
  traced_ = scheduler::traced(p);
  run_epoch_ = s->epoch;
  error_ = nullptr;
  {
    std::lock_guard lock{cancel_mutex_};
    cancellable_ = s;
  }
  if (dirty_ && has_backward_) {
    // Only after a start that failed this check: its queued successors
    // fail the same way.
    try {
      check_cycles();
    } catch (...) {
      fail(std::current_exception());
      return false;
    }
  }
  dirty_ = false;
  if (has_conditions_) {
    // A condition leaves the branches it did not take with partly counted
    // predecessors: start every task afresh.
    nodes_.for_each([](graph_node* n) {
      // Relaxed: published by the pushes of the sources.
      n->pending.store(n->strong, std::memory_order_relaxed);
      n->skip.store(false, std::memory_order_relaxed);
    });
  }
  if (sources_.empty()) return false;
  // Relaxed: published by the pushes of the sources.
  in_flight_.store(sources_.size(), std::memory_order_relaxed);
  return true;
}

void graph_core::run_node(job* j) noexcept {
  auto* n = static_cast<graph_node*>(j);
  graph_core& g = *n->owner;
  const running_scope running{g.pool_, g.run_epoch_, &g};
  // One ready successor runs next on this thread; the loop keeps the stack
  // flat however long the chain.
  do {
    n = g.step(n);
  } while (n != nullptr);
}

graph_node* graph_core::step(graph_node* n) noexcept {
  // Ready: no predecessor touches the counter again in this run, so it can
  // be set up for the next one now. Relaxed: published to the next run by
  // finish_run()'s release and start()'s acquire.
  n->pending.store(n->strong, std::memory_order_relaxed);
  // Relaxed: the predecessor's store is ordered before its acq_rel decrement
  // of pending, which our reading of the count as ready synchronises with.
  bool skip = n->skip.load(std::memory_order_relaxed);
  if (skip) n->skip.store(false, std::memory_order_relaxed);
  skip = skip || stopping() || !n->claim();
  if (skip) return release_successors<false>(n, true, no_choice, nullptr);
  if (traced_) [[unlikely]]
    return traced_step(n);
  return release_successors<false>(n, false, call(n), nullptr);
}

std::size_t graph_core::synced_call(graph_node* n) {
  graph_core& g = *n->owner;
  // A task that must wait is queued on a semaphore and holds its unit of
  // in_flight_ until a release reschedules it; step() then runs again from
  // the top.
  if (!g.acquire_all(n)) return waiting_choice;
  const sync_lists& l = *g.syncs_[n->index];
  struct release_all {
    const std::vector<semaphore*>& release;
    ~release_all() {
      for (semaphore* s : release) wake(s->release());
    }
  } const guard{l.release};  // also when the callable throws
  return l.inner != nullptr ? l.inner(n) : no_choice;
}

void graph_core::set_call(graph_node* n, std::size_t (*f)(graph_node*)) noexcept {
  if (!n->synced) {
    n->call = f;
    return;
  }
  syncs_[n->index]->inner = f;
  n->call = &synced_call;
}

bool graph_core::acquire_all(graph_node* n) noexcept {
  const std::vector<semaphore*>& wanted = syncs_[n->index]->acquire;
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    if (wanted[i]->try_acquire(n)) continue;
    // Queued on wanted[i]: a release may run n again from now on, so n's
    // state is not touched below. The units taken so far go back, and
    // their waiters get a turn (Taskflow's rule: all or nothing).
    for (std::size_t k = 0; k < i; ++k) wake(wanted[k]->release());
    return false;
  }
  return true;
}

void graph_core::wake(graph_node* chain) noexcept {
  while (chain != nullptr) {
    // Read first: once queued, the task may run and wait again.
    graph_node* const next = waiter_link(chain);
    job* j = chain;
    chain->owner->publish(&j, 1);
    chain = next;
  }
}

void graph_core::add_sync(graph_node* n, semaphore& s, bool acquire) {
  check_idle("add a semaphore to");
  if (syncs_.size() <= n->index) syncs_.resize(n->index + 1);
  std::unique_ptr<sync_lists>& l = syncs_[n->index];
  if (!l) l = std::make_unique<sync_lists>();
  (acquire ? l->acquire : l->release).push_back(&s);
  if (!n->synced) {
    const auto own = n->call;
    n->synced = true;
    set_call(n, own);
  }
}

std::size_t graph_core::call(graph_node* n) noexcept {
  if (n->call == nullptr) return no_choice;
  try {
    return n->call(n);
  } catch (...) {
    fail(std::current_exception());
    return no_choice;
  }
}

graph_node* graph_core::traced_step(graph_node* n) noexcept {
  char label[24];
  std::string_view name = name_of(n);
  if (name.empty()) {
    const int len = std::snprintf(label, sizeof(label), "task #%u", n->index);
    name = std::string_view{label, static_cast<std::size_t>(std::max(len, 0))};
  }
  // A task is identified to the edges that release it by its address.
  const task_trace t{name, reinterpret_cast<std::uintptr_t>(n)};
  return release_successors<true>(n, false, call(n), &t);
}

template <bool Traced>
graph_node* graph_core::release_successors(graph_node* n, bool skip, std::size_t choice,
                                           const task_trace* t) noexcept {
  if (choice >= subflow_choice && choice <= waiting_choice) [[unlikely]] {
    // Queued on a semaphore, with its unit (synced_call); or its subflow runs.
    return choice == waiting_choice ? nullptr : subflow_returned<Traced>(n, t);
  }
  const std::uint32_t k = n->successors.size();
  if (chooses(n->kind)) {
    if (choice == multi_choice) return release_chosen<Traced>(n, t);
    if (choice < k) {
      graph_node* chosen = n->successors[static_cast<std::uint32_t>(choice)];
      if constexpr (Traced) t->released(reinterpret_cast<std::uintptr_t>(chosen));
      return chosen;
    }
    retire(1);
    return nullptr;
  }
  if (k == 0) {
    retire(1);
    return nullptr;
  }
  // Relaxed: we hold a unit, so the count stays above zero meanwhile; the
  // units are handed over with the pushes.
  if (k > 1) in_flight_.fetch_add(k - 1, std::memory_order_relaxed);
  std::size_t units = k;
  graph_node* next = nullptr;
  // Ready successors beyond the first are pushed in batches: one publishing
  // store per batch instead of one per task (a wide fan makes 100,000 ready
  // at once).
  std::array<job*, 64> ready;  // not cleared: only [0, n_ready) is read
  std::size_t n_ready = 0;
  for (graph_node* s : n->successors) {
    if (skip) s->skip.store(true, std::memory_order_relaxed);
    // acq_rel: release publishes this task's effects (and the skip flag) to
    // the successor; acquire, on the decrement that makes it ready, sees
    // every other predecessor's.
    if (s->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      if constexpr (Traced) t->released(reinterpret_cast<std::uintptr_t>(s));
      --units;
      if (next == nullptr) {
        next = s;
      } else {
        ready[n_ready++] = s;
        if (n_ready == ready.size()) {
          publish(ready.data(), n_ready);
          n_ready = 0;
        }
      }
    }
  }
  if (n_ready != 0) publish(ready.data(), n_ready);
  if (units != 0) retire(units);
  return next;
}

template <bool Traced>
graph_node* graph_core::release_chosen(graph_node* n, const task_trace* t) noexcept {
  // A condition's successors run when chosen, whatever their counters say
  // (conditional edges are not counted): the first next on this thread, the
  // others queued, each with a unit of in_flight_.
  // Taken out of the thread-local: a task that publish() runs here (when a
  // queue cannot grow) may be a multi-condition too. Moves allocate nothing.
  std::vector<std::uint32_t> chosen = std::move(chosen_branches);
  struct give_back {
    std::vector<std::uint32_t>& from;
    ~give_back() {
      from.clear();
      if (chosen_branches.capacity() < from.capacity()) chosen_branches = std::move(from);
    }
  } const keep_capacity{chosen};
  const std::size_t m = chosen.size();
  if (m == 0) {
    retire(1);
    return nullptr;
  }
  // Relaxed: we hold a unit; the pushes hand the others over.
  if (m > 1) in_flight_.fetch_add(m - 1, std::memory_order_relaxed);
  std::array<job*, 64> ready;  // not cleared: only [0, n_ready) is read
  std::size_t n_ready = 0;
  for (std::size_t i = 0; i < m; ++i) {
    graph_node* s = n->successors[chosen[i]];
    if constexpr (Traced) t->released(reinterpret_cast<std::uintptr_t>(s));
    if (i == 0) continue;
    ready[n_ready++] = s;
    if (n_ready == ready.size()) {
      publish(ready.data(), n_ready);
      n_ready = 0;
    }
  }
  graph_node* const next = n->successors[chosen[0]];
  if (n_ready != 0) publish(ready.data(), n_ready);
  return next;
}

void graph_core::publish(job* const* ready, std::size_t n) noexcept {
  // A semaphore's release may reschedule a task of another graph on
  // another pool (wake()): each graph publishes to its own run's pool.
  // Out of memory for a queue to grow: run the tasks not pushed here, one
  // after another, rather than lose them. Each holds its unit of
  // in_flight_, so the run still finishes exactly once.
  for (std::size_t i = scheduler::publish(*pool_, ready, n); i < n; ++i) run_node(ready[i]);
}

void graph_core::retire(std::size_t units) noexcept {
  // acq_rel: release hands this thread's work to the finisher; the finisher's
  // acquire sees every task of the run.
  if (in_flight_.fetch_sub(units, std::memory_order_acq_rel) == units) finish_run();
}

void graph_core::fail(std::exception_ptr error) noexcept {
  // Relaxed: tasks see the stop eventually (stopping()); the error itself is
  // under the mutex.
  current_->status.fetch_or(run_state::failed_bit, std::memory_order_relaxed);
  std::lock_guard lock{error_mutex_};
  if (!error_) error_ = std::move(error);
}

bool graph_core::run_again(run_state* s) noexcept {
  // Relaxed: a cancel seen late only costs one more run, which it stops;
  // finish_run()'s acq_rel read of the status decides the outcome. error_
  // was written before the tasks' acq_rel decrements of in_flight_.
  if (error_ || (s->status.load(std::memory_order_relaxed) & run_state::stop_mask) != 0) {
    return false;
  }
  if (s->until) {
    try {
      return !s->until();
    } catch (...) {
      fail(std::current_exception());
      return false;
    }
  }
  if (s->repeats == 0) return false;
  --s->repeats;
  return true;
}

void graph_core::finish_run() noexcept {
  // Each pass ends the run in flight, or starts it again (a sequence), and
  // goes on with the next run while runs end as soon as they start (a graph
  // without tasks): a loop, so that no sequence or queue deepens the stack.
  for (;;) {
    run_state* s = current_;
    if (run_again(s)) {
      if (!prepare_run(s)) continue;
      launch_prepared(*s->owner, true);
      return;
    }
    if (parent_ != nullptr) {
      finish_subflow_run(s);
      return;
    }
    pool* p = pool_;
    const unsigned epoch = run_epoch_;
    {
      // From here on cancel() does not find this run, so its state can be
      // reused.
      std::lock_guard lock{cancel_mutex_};
      cancellable_ = nullptr;
    }
    // acq_rel: see run_state::request_cancel() and run_state::on_dropped().
    const unsigned status = s->status.fetch_or(run_state::finished_bit, std::memory_order_acq_rel);
    const bool dropped = (status & run_state::dropped_bit) != 0;
    if (error_) {
      if (dropped) {
        // Nobody will see the future's error: the pool's error path gets it.
        scheduler::report_error(*p, std::exchange(error_, nullptr));
      } else {
        s->error = std::exchange(error_, nullptr);
      }
    } else if ((status & run_state::cancel_bit) != 0) {
      // A cancel asked for is no error: only a future still held learns of it.
      if (!dropped) {
        try {
          throw run_cancelled("weft::graph: the run was cancelled before it finished");
        } catch (...) {
          s->error = std::current_exception();
        }
      }
    } else {
      s->value.emplace();
    }
    // The next queued run now has the turn; without one, the graph may be
    // run again or destroyed from here on, so nothing below touches it.
    run_state* const next = release_turn();
    s->done.set();
    // acq_rel: as in future_state::drop(); the last owner destroys the state.
    if (s->refs.fetch_sub(run_state::run_ref, std::memory_order_acq_rel) == run_state::run_ref) {
      if (s->error) report_unretrieved(s->error);
      destroy_state(s);
    }
    if (next == nullptr) {
      scheduler::leave(*p, epoch);  // last: the pool may be destroyed once its count is zero
      return;
    }
    // With the turn, the graph stays: start the next run (on its own pool).
    const bool queued = prepare_run(next);
    if (queued) launch_prepared(*next->owner, true);
    scheduler::leave(*p, epoch);  // our run's pool; the next run keeps its own
    if (queued) return;
  }
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

void detail::graph_core::dump(std::ostream& out) const {
  out << "digraph weft {\n";
  nodes_.for_each([&](const graph_node* n) {
    out << "  t" << n->index << " [label=";
    write_dot_string(out, task_label(n));
    switch (n->kind) {
      case node_kind::condition:
        out << ", shape=diamond";
        break;
      case node_kind::multi_condition:
        out << ", shape=diamond, peripheries=2";
        break;
      case node_kind::placeholder:
        out << ", shape=box, style=dashed";
        break;
      case node_kind::module:
        out << ", shape=box, peripheries=2";
        break;
      case node_kind::subflow:
        out << ", shape=box3d";
        break;
      case node_kind::work:
        break;
    }
    out << "];\n";
  });
  nodes_.for_each([&](const graph_node* n) {
    std::uint32_t i = 0;
    for (const graph_node* s : n->successors) {
      out << "  t" << n->index << " -> t" << s->index;
      if (chooses(n->kind)) out << " [style=dashed, label=\"" << i << "\"]";
      out << ";\n";
      ++i;
    }
  });
  out << "}\n";
}

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

bool semaphore::try_acquire(detail::graph_node* n) noexcept {
  std::lock_guard lock{mutex_};
  if (free_ > 0) {
    --free_;
    return true;
  }
  detail::graph_core::waiter_link(n) = nullptr;
  if (tail_ != nullptr) {
    detail::graph_core::waiter_link(tail_) = n;
  } else {
    head_ = n;
  }
  tail_ = n;
  return false;
}

detail::graph_node* semaphore::release() noexcept {
  std::lock_guard lock{mutex_};
  // A release that no acquire took is ignored beyond the maximum.
  if (free_ < max_) ++free_;
  // Every waiter gets a turn: one that finds the unit taken again queues
  // again, and one that needs other semaphores too may not want this one
  // first (Taskflow's rule).
  detail::graph_node* chain = std::exchange(head_, nullptr);
  tail_ = nullptr;
  return chain;
}

}  // namespace weft
