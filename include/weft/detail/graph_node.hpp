// A graph's tasks (weft/graph.hpp): a task node, its successor list, its
// callable, and the arena the nodes live in. Included by weft/graph.hpp;
// docs/graph.md describes the machinery.
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
#include "job.hpp"

namespace weft {

class graph;
class task;
class semaphore;
class subflow;

namespace detail {

class graph_core;
struct graph_node;
struct subflow_slot;  // src/graph/internal.hpp
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
// src/graph/run.cpp, not inline: MinGW's GCC emits an inline thread_local's
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

// A subflow task's call, around its callable (src/graph/build.cpp): the task's
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

}  // namespace detail
}  // namespace weft
