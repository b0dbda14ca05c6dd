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

namespace detail {

class graph_core;
struct graph_node;
struct subflow_slot;  // src/graph.cpp
class task_trace;     // detail/trace.hpp

// A task's successors: two inline slots (chains and trees need no more),
// then a heap array that doubles. Only the graph's builder changes it; runs
// only read.
class successor_list {
 public:
  successor_list() noexcept = default;
  successor_list(const successor_list&) = delete;
  successor_list& operator=(const successor_list&) = delete;
  ~successor_list() {
    if (on_heap()) delete[] data_;
  }

  void push_back(graph_node* n) {
    if (size_ == capacity_) grow();
    data_[size_++] = n;
  }
  // Removes the first n, keeping the others' order; false if n is absent.
  bool erase(const graph_node* n) noexcept {
    graph_node** const last = data_ + size_;
    graph_node** const at = std::find(data_, last, n);
    if (at == last) return false;
    std::copy(at + 1, last, at);
    --size_;
    return true;
  }
  [[nodiscard]] std::uint32_t size() const noexcept { return size_; }
  [[nodiscard]] bool on_heap() const noexcept { return data_ != inline_; }
  [[nodiscard]] graph_node* operator[](std::uint32_t i) const noexcept { return data_[i]; }
  [[nodiscard]] graph_node* const* begin() const noexcept { return data_; }
  [[nodiscard]] graph_node* const* end() const noexcept { return data_ + size_; }

 private:
  void grow() {
    const std::uint32_t cap = capacity_ * 2;
    auto* bigger = new graph_node*[cap];
    std::copy(data_, data_ + size_, bigger);
    if (on_heap()) delete[] data_;
    data_ = bigger;
    capacity_ = cap;
  }

  static constexpr std::uint32_t inline_capacity = 2;
  graph_node* inline_[inline_capacity] = {};
  graph_node** data_ = inline_;
  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = inline_capacity;
};

enum class node_kind : std::uint8_t {
  placeholder,
  work,
  condition,
  multi_condition,
  module,
  subflow  // its callable takes a weft::subflow& and builds a child graph
};

// Whether a task of kind k chooses which of its successors run (its edges
// are conditional).
constexpr bool chooses(node_kind k) noexcept {
  return k == node_kind::condition || k == node_kind::multi_condition;
}

// No successor chosen by a condition task.
inline constexpr std::size_t no_choice = static_cast<std::size_t>(-1);
// A multi-condition task's choices are in chosen_branches.
inline constexpr std::size_t multi_choice = no_choice - 1;
// A task found a semaphore empty and waits in its queue (graph_core::synced_call).
inline constexpr std::size_t waiting_choice = no_choice - 2;
// A subflow task returned while its subflow runs (graph_core::end_subflow):
// its successors wait for whichever of the two ends second.
inline constexpr std::size_t subflow_choice = no_choice - 3;

// What a task may return: nothing, a successor index (a condition task), or
// a range of them (a multi-condition task). bool is neither, and a range of
// characters (a std::string) is text, not indices.
template <class R>
concept successor_index = std::integral<R> && !std::same_as<R, bool>;
template <class T>
concept character = std::same_as<T, char> || std::same_as<T, signed char> ||
    std::same_as<T, unsigned char> || std::same_as<T, wchar_t> || std::same_as<T, char8_t> ||
    std::same_as<T, char16_t> || std::same_as<T, char32_t>;
template <class R>
concept successor_indices = std::ranges::input_range<R> &&
    successor_index<std::ranges::range_value_t<R>> && !character<std::ranges::range_value_t<R>>;

// What stands for the result of a callable taking a weft::subflow&.
struct subflow_call {};

// What a task's callable C returns: invoked with no argument, or
// subflow_call when it takes a weft::subflow& instead.
template <class C>
struct task_result {
  using type = subflow_call;
};
template <class C>
requires std::is_invocable_v<C&>
struct task_result<C> {
  using type = std::invoke_result_t<C&>;
};
template <class C>
using task_result_t = typename task_result<C>::type;

// The kind of a task whose callable returns R.
template <class R>
constexpr node_kind kind_for() noexcept {
  if constexpr (std::is_same_v<R, subflow_call>) {
    return node_kind::subflow;
  } else if constexpr (std::is_void_v<R>) {
    return node_kind::work;
  } else if constexpr (successor_index<R>) {
    return node_kind::condition;
  } else {
    return node_kind::multi_condition;
  }
}

// Whether C can be a task's callable (graph::emplace, task::work), with
// weft's message when it cannot.
template <class C>
consteval bool valid_task() {
  if constexpr (!std::is_invocable_v<C&> && std::is_invocable_v<C&, subflow&>) {
    constexpr bool ok = std::is_void_v<std::invoke_result_t<C&, subflow&>>;
    static_assert(ok,
                  "weft::graph::emplace, task::work: a task taking a weft::subflow& returns "
                  "void (its subflow's tasks decide what runs)");
    return ok;
  } else {
    static_assert(std::is_invocable_v<C&>,
                  "weft::graph::emplace, task::work: a task is callable with no arguments "
                  "(capture what it needs), or with a weft::subflow& (a subflow task)");
    if constexpr (std::is_invocable_v<C&>) {
      using R = std::invoke_result_t<C&>;
      constexpr bool ok = std::is_void_v<R> || successor_index<R> || successor_indices<R>;
      static_assert(ok,
                    "weft::graph::emplace, task::work: a task returns void, an integral "
                    "successor index (a condition task), or a range of them (a multi-condition "
                    "task)");
      return ok;
    }
    return false;
  }
}

// The successors the last multi-condition task this thread ran chose, in
// range [0, its successor count), each once: written by call_node(), read at
// once by graph_core::release_successors() on the same thread. Defined in
// src/graph.cpp, not inline: MinGW's GCC emits an inline thread_local's
// TLS init function in every translation unit (a duplicate symbol).
extern thread_local std::vector<std::uint32_t> chosen_branches;

// One task: a job in the graph's stable storage. Fields written while the
// graph is built are read-only during a run; `pending`, `skip` and `gate`
// are the only ones a run writes.
struct graph_node : job {
  static constexpr std::size_t storage_size = 32;

  // gate: whether the task may start. `open` until its first start,
  // `started` after it, `cancelled` after task::cancel() until task::reset().
  static constexpr std::uint8_t open = 0;
  static constexpr std::uint8_t started = 1;
  static constexpr std::uint8_t cancelled = 2;

  graph_node(graph_core* g, node_kind k, std::uint32_t i) noexcept : owner(g), index(i), kind(k) {}
  graph_node(const graph_node&) = delete;
  graph_node& operator=(const graph_node&) = delete;
  ~graph_node() {
    if (destroy != nullptr) destroy(this);
  }

  // Takes the task's place in this run: false if it was cancelled.
  bool claim() noexcept {
    // Relaxed throughout: the gate is a flag on its own, and what cancel()
    // reports follows from the gate's modification order alone.
    std::uint8_t g = gate.load(std::memory_order_relaxed);
    for (;;) {
      if (g == cancelled) return false;
      if (g == started) return true;
      if (gate.compare_exchange_weak(g, started, std::memory_order_relaxed)) return true;
    }
  }

  // Position in graph_core::sources_ while the task has no predecessor.
  // First: 4 bytes, in the job's tail padding (see job), which keeps a node
  // at two cache lines.
  std::uint32_t source_slot = no_slot;
  graph_core* const owner;
  // The callable: returns the successor a condition task chose, no_choice
  // otherwise. Null for placeholders.
  std::size_t (*call)(graph_node*) = nullptr;
  void (*destroy)(graph_node*) noexcept = nullptr;
  alignas(void*) std::byte storage[storage_size];
  successor_list successors;
  // Predecessors left in this run; equal to `strong` between runs. Each
  // predecessor's decrement is acq_rel (see graph_core::release_successors).
  std::atomic<std::uint32_t> pending{0};
  std::uint32_t strong = 0;   // normal predecessors
  std::uint32_t weak = 0;     // conditional predecessors
  const std::uint32_t index;  // also the key of its name (graph_core::name_of)
  node_kind kind;             // changed only while the graph is idle (task::work)
  std::atomic<std::uint8_t> gate{open};
  // Whether the task acquires or releases semaphores (graph_core::syncs_):
  // then `call` is graph_core::synced_call, which wraps the task's own.
  bool synced = false;
  // Set by a skipped predecessor before its decrement of `pending`: this
  // task is skipped too in this run.
  std::atomic<bool> skip{false};
  static constexpr std::uint32_t no_slot = static_cast<std::uint32_t>(-1);
};
static_assert(sizeof(graph_node) <= 2 * cache_line, "a task node keeps to two cache lines");

// Where graph_node callables live: inline when small enough, else boxed.
template <class C>
constexpr bool node_inline_v() noexcept {
  constexpr bool small = sizeof(C) <= graph_node::storage_size;
  constexpr bool aligned = alignof(C) <= alignof(void*);
  return small && aligned;
}
template <class C>
inline constexpr bool node_inline = node_inline_v<C>();

template <class C>
C& node_callable(graph_node* n) noexcept {
  if constexpr (node_inline<C>) {
    return *std::launder(reinterpret_cast<C*>(n->storage));
  } else {
    return **std::launder(reinterpret_cast<C**>(n->storage));
  }
}

// A subflow task's call, around its callable (src/graph.cpp): the task's
// subflow, emptied for this run; then, with what the callable built, the
// child graph's run (no_choice: nothing to wait for, or detached;
// subflow_choice: the task's successors wait until it has finished).
subflow& begin_subflow(graph_node* n);
std::size_t end_subflow(graph_node* n);

template <class C, class R>
std::size_t call_node(graph_node* n) {
  if constexpr (std::is_same_v<R, subflow_call>) {
    node_callable<C>(n)(begin_subflow(n));
    return end_subflow(n);
  } else if constexpr (std::is_void_v<R>) {
    node_callable<C>(n)();
    return no_choice;
  } else if constexpr (successor_indices<R>) {
    const R r = node_callable<C>(n)();
    std::vector<std::uint32_t>& out = chosen_branches;
    out.clear();
    const std::uint32_t k = n->successors.size();
    for (const auto i : r) {
      if constexpr (std::is_signed_v<std::ranges::range_value_t<R>>) {
        if (i < 0) continue;
      }
      if (static_cast<std::make_unsigned_t<decltype(i)>>(i) >= k) continue;
      const auto index = static_cast<std::uint32_t>(i);
      // Each successor once, in the order first chosen.
      if (std::find(out.begin(), out.end(), index) == out.end()) out.push_back(index);
    }
    return multi_choice;
  } else {
    const R r = node_callable<C>(n)();
    if constexpr (std::is_signed_v<R>) {
      if (r < 0) return no_choice;
    }
    return static_cast<std::size_t>(r);
  }
}

template <class C>
void destroy_node_callable(graph_node* n) noexcept {
  if constexpr (node_inline<C>) {
    node_callable<C>(n).~C();
  } else {
    delete &node_callable<C>(n);
  }
}

template <class C, class R, class F>
void store_callable(graph_node* n, F&& f) {
  if constexpr (node_inline<C>) {
    ::new (static_cast<void*>(n->storage)) C(std::forward<F>(f));
    if constexpr (!std::is_trivially_destructible_v<C>) n->destroy = &destroy_node_callable<C>;
  } else {
    ::new (static_cast<void*>(n->storage)) C*(new C(std::forward<F>(f)));
    n->destroy = &destroy_node_callable<C>;
  }
  n->call = &call_node<C, R>;
}

// Task storage that never moves: chunks that double from 64 nodes up to
// 65,536, each node constructed in place.
class node_arena {
 public:
  node_arena() = default;
  node_arena(const node_arena&) = delete;
  node_arena& operator=(const node_arena&) = delete;
  ~node_arena();

  // Raw storage for one more node; construct it before the next call.
  void* allocate() {
    if (next_ == end_) grow(0);
    return next_;
  }
  // The node at allocate()'s address is constructed: count it.
  void commit() noexcept {
    ++next_;
    ++size_;
  }
  // Room for n more nodes without a further chunk.
  void reserve(std::size_t n) {
    if (static_cast<std::size_t>(end_ - next_) < n) grow(n);
  }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  // The nodes need no destructor call (nothing boxed, no successor array).
  void skip_destructors() noexcept { destroy_nodes_ = false; }

  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < chunks_.size(); ++i) {
      graph_node* const first = chunks_[i].first;
      graph_node* const last = i + 1 == chunks_.size() ? next_ : first + chunks_[i].used;
      for (graph_node* n = first; n != last; ++n) f(n);
    }
  }

 private:
  struct chunk {
    graph_node* first;
    std::size_t capacity;
    std::size_t used;  // nodes constructed; kept up to date for all but the last chunk
  };
  void grow(std::size_t at_least);

  std::vector<chunk> chunks_;
  graph_node* next_ = nullptr;
  graph_node* end_ = nullptr;
  std::size_t size_ = 0;
  bool destroy_nodes_ = true;
};

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
    try {
      if (k == node_kind::subflow) make_subflow_slot(n);
      store_callable<C, R>(n, std::forward<F>(f));
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

  // begin_subflow() and end_subflow() (src/graph.cpp).
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
