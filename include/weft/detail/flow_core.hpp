// A flow's body (weft/flow.hpp): reductions, what emplace tells the core
// of each access, the task node, commute locks and flow_core itself.
// Included by weft/flow.hpp; the definitions are in src/flow/.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../flow_options.hpp"
#include "../future.hpp"
#include "../pool.hpp"
#include "job.hpp"
#include "latch.hpp"
#include "scheduler.hpp"

namespace weft {

class flow;
class flow_task;

namespace detail {

class flow_core;
struct flow_node;
class task_trace;  // detail/trace.hpp
class commute_lock;
struct flow_watch;  // detail/coro_flow.hpp

// A combined object of a reduce run: one private copy per worker plus one
// for other threads; combine() folds them into the object in worker order.
class reduction_base {
 public:
  reduction_base() = default;
  reduction_base(const reduction_base&) = delete;
  reduction_base& operator=(const reduction_base&) = delete;
  virtual ~reduction_base() = default;
  virtual void combine() = 0;
};

template <class T, class Op>
class reduction final : public reduction_base {
 public:
  reduction(T* target, const Op& op, std::size_t workers)
      : target_(target), op_(op), slots_(workers) {}

  // The calling thread's private copy; `guest` is set when the thread is not
  // one of the pool's workers (its copy is then shared, under a lock the
  // caller holds for the whole task).
  T& local(std::optional<std::size_t> worker) {
    std::optional<T>& slot = worker && *worker < slots_.size() ? slots_[*worker] : guest_slot_;
    if (!slot) slot.emplace();
    return *slot;
  }
  std::mutex& guest_mutex() noexcept { return guest_mutex_; }

  void combine() override {
    for (std::optional<T>& slot : slots_) fold(slot);
    fold(guest_slot_);
  }

 private:
  void fold(std::optional<T>& slot) {
    if (!slot) return;
    *target_ = op_(std::move(*target_), std::move(*slot));
    slot.reset();
  }

  T* target_;
  Op op_;
  std::vector<std::optional<T>> slots_;
  std::optional<T> guest_slot_;
  std::mutex guest_mutex_;
};

// What emplace tells the core about one declared access.
struct access_desc {
  const void* object = nullptr;
  access_mode mode = access_mode::read;
  // reduce: makes the object's reduction (one per object and reduce run).
  reduction_base* (*make_reduction)(void* object, const void* op, std::size_t workers) = nullptr;
  const void* op = nullptr;
  // reduce: where the task keeps the reduction it is to use.
  reduction_base** bind = nullptr;
  // after(future): the latch to wait for; after(flow_task): the task.
  const latch* after_latch = nullptr;
  flow_node* after_node = nullptr;
  std::uint32_t after_generation = 0;
  bool is_after = false;
};

// The bytes a task keeps its callable and bound objects in without boxing.
inline constexpr std::size_t flow_storage_size = 64;

// A successor list block beyond the node's inline slots; blocks never move
// and are kept for the node's next tasks.
struct successor_block {
  static constexpr std::uint32_t size = 14;
  flow_node* slots[size];
  successor_block* next = nullptr;
};

// A reference to a task that survives the node's reuse: the node's
// generation at the time the reference was taken.
struct node_ref {
  flow_node* node = nullptr;
  std::uint32_t generation = 0;
};

// One task of a flow: a job in the flow's node slab, reused once the task
// has finished and no queue holds it any more.
struct alignas(cache_line) flow_node : job {
  // phase: where the task is in its life.
  static constexpr std::uint8_t waiting = 0;  // predecessors left
  static constexpr std::uint8_t queued = 1;   // ready, in some queue; may be claimed
  static constexpr std::uint8_t running = 2;  // claimed by a thread
  static constexpr std::uint8_t parked = 3;   // waits for a commute lock
  static constexpr std::uint8_t done = 4;

  // successors_state: count << 1 | closed.
  static constexpr std::uint32_t closed = 1;
  static constexpr std::uint32_t inline_successors = 4;
  static constexpr std::uint32_t inline_predecessors = 4;
  // Capacity each node starts with beyond the inline slots.
  static constexpr std::size_t reserved_predecessors = 12;
  static constexpr std::size_t reserved_locks = 4;

  // Read by the thread that runs the task.
  flow_core* owner = nullptr;
  // Runs the callable with the bound objects (null for an internal task).
  void (*call)(flow_node*) = nullptr;
  void (*destroy)(flow_node*) noexcept = nullptr;
  reduction_base* combine = nullptr;  // internal combine task's reduction
  latch* barrier = nullptr;           // wait(x)'s barrier task: set when it runs
  // wait(x) claimed the task while a queue entry pointed at it: the entry
  // holds the node until it is popped (see holds).
  bool stale_entry = false;
  // Commute locks the task must hold while it runs; capacity kept.
  std::vector<commute_lock*> locks;
  alignas(void*) std::byte storage[flow_storage_size];

  // Written by several threads: a line of their own.
  // Appended by the producer only, read by the finisher after it closed the
  // list (a fetch_or on successors_state; docs/flow.md).
  alignas(cache_line) std::atomic<std::uint32_t> successors_state{0};
  // Producer's guard plus one per predecessor (or future) still to finish;
  // the thread that brings it to zero makes the task ready.
  std::atomic<std::int32_t> pending{0};
  std::atomic<std::uint8_t> phase{waiting};
  // Queue entries holding the node plus one until it has run; the node is
  // reused when it reaches zero.
  std::atomic<std::uint8_t> holds{0};
  flow_node* successors[inline_successors] = {};
  successor_block* more_successors = nullptr;  // producer writes, finisher reads after close
  flow_node* free_next = nullptr;              // while free
  // after(future): notified by the future's latch; a task's further
  // futures use extra_waiters (capacity kept across reuse).
  struct future_edge final : latch_waiter {
    flow_node* node = nullptr;
  } future_edge_waiter;
  std::vector<future_edge> extra_waiters;

  // Producer only.
  // Bumped on every reuse (node_ref); the task's number; visited marks.
  alignas(cache_line) std::uint32_t generation = 0;
  bool waits_for_future = false;  // after(future): wait(x) may have to run jobs
  std::uint32_t predecessor_count = 0;
  std::uint64_t serial = 0;
  std::uint64_t mark = 0;
  // The tasks this one waits for (wait(x) walks them).
  node_ref predecessors[inline_predecessors];
  std::vector<node_ref> more_predecessors;  // capacity kept across reuse
};

// A commute run's lock: a task that finds it taken parks on it and is
// queued again when the holder finishes.
class commute_lock {
 public:
  // True if the lock was free and is now n's; else n is parked on it.
  bool acquire_or_park(flow_node* n);
  // For a thread that could not park (no memory): true if it took the lock.
  bool try_acquire() noexcept {
    std::lock_guard lock{mutex_};
    if (busy_) return false;
    busy_ = true;
    return true;
  }
  // Releases the lock; returns a parked task to queue again, if any.
  flow_node* release() noexcept;
  void reset() noexcept {
    busy_ = false;
    parked_.clear();
  }

 private:
  std::mutex mutex_;
  bool busy_ = false;
  std::vector<flow_node*> parked_;
};

template <class C>
constexpr bool flow_inline_v() noexcept {
  constexpr bool small = sizeof(C) <= flow_storage_size;
  constexpr bool aligned = alignof(C) <= alignof(void*);
  return small && aligned;
}

template <class C>
C& flow_callable(flow_node* n) noexcept {
  if constexpr (flow_inline_v<C>()) {
    return *std::launder(reinterpret_cast<C*>(n->storage));
  } else {
    return **std::launder(reinterpret_cast<C**>(n->storage));
  }
}

template <class C>
void destroy_flow_callable(flow_node* n) noexcept {
  if constexpr (flow_inline_v<C>()) {
    flow_callable<C>(n).~C();
  } else {
    delete &flow_callable<C>(n);
  }
}

struct object_state;

// The body of a flow: stays at one address (flow moves move the pointer),
// so nodes can point at it.
class flow_core {
 public:
  flow_core(pool& p, const flow_options& options);
  flow_core(const flow_core&) = delete;
  flow_core& operator=(const flow_core&) = delete;
  ~flow_core();

  // A node for the next task; marks the producer busy until submit() (or
  // unallocate()) returns.
  flow_node* allocate();
  // Gives back a node whose callable failed to construct.
  void unallocate(flow_node* n) noexcept;
  // Computes the task's edges from its accesses, links it and, once ready,
  // queues it. May wait for the window first.
  void submit(flow_node* n, const access_desc* accesses, std::size_t count);

  void wait();
  // Waits for every task emplaced so far (no rethrow); for the destructor.
  void drain();
  // drain() without folding open reductions first (which may allocate).
  void drain_without_reductions();
  void wait_for_object(const void* object);
  bool cancel() noexcept;
  void dump(std::ostream& out) const;
  void set_name(flow_node* n, std::uint32_t generation, std::string_view name);
  // An exception no wait() rethrew goes to the pool's error path.
  void report_left_errors() noexcept;
  // co_await of a flow task (detail/coro_flow.hpp, src/flow/await.cpp): a
  // producer operation, as wait(x) is. False, with w filled, if the task
  // (n at `generation`) has finished; else a barrier task after it fills w
  // and sets w.reached when it runs.
  bool watch(flow_node* n, std::uint32_t generation, flow_watch& w);

  [[nodiscard]] pool& owner() const noexcept { return *pool_; }

  // Serialises tasks with reduce accesses run by threads that are not the
  // pool's workers (they share one private copy per reduction).
  std::recursive_mutex& guest_mutex() noexcept { return guest_mutex_; }

  static void run_node(job* j) noexcept;

 private:
  class object_table;
  struct record;

  void enter_producer();
  void leave_producer() noexcept;
  // Ends the producer's busy mark when the call that set it returns.
  struct producer_scope {
    explicit producer_scope(flow_core& c) noexcept : core(c) {}
    flow_core& core;
    producer_scope(const producer_scope&) = delete;
    producer_scope& operator=(const producer_scope&) = delete;
    ~producer_scope() { core.leave_producer(); }
  };
  flow_node* allocate_internal();
  void count_unfinished(std::uint64_t k);
  void start_unit(std::uint64_t k);
  void finish_units(std::uint64_t k) noexcept;
  void wait_until_below(std::uint64_t limit, std::uint64_t wish);
  void rethrow_and_reset();

  // Dependency inference (producer only).
  void close_reductions_of(const access_desc* accesses, std::size_t count);
  void collect_predecessors(flow_node* n, const access_desc* accesses, std::size_t count,
                            record* rec);
  void add_predecessor(flow_node* n, node_ref r, const void* object, access_mode mode, record* rec);
  void close_reduction(object_state& st);
  void close_all_reductions();
  commute_lock* new_lock();
  [[nodiscard]] std::size_t purge_threshold() const noexcept;
  void link_and_release(flow_node* n, const access_desc* accesses, std::size_t count);
  void validate(const access_desc* accesses, std::size_t count) const;
  void give_back(flow_node* n) noexcept;
  static std::int32_t count_futures(const access_desc* accesses, std::size_t count) noexcept;
  static void prepare_future_waiters(flow_node* n, std::int32_t futures);
  void run_body(flow_node* n) noexcept;
  static void finish_body(flow_node* n) noexcept;
  static void disarm(flow_node* n) noexcept;
  bool link(flow_node* from, flow_node* to);
  void await_finished(const node_ref& r);
  void remember_predecessor(flow_node* n, node_ref r);
  std::int32_t subscribe_futures(flow_node* n, const access_desc* accesses, std::size_t count);
  static void on_future_ready(latch_waiter* w) noexcept;
  // Records in w whether the flow has stopped, and why (watch()).
  void observe(flow_watch& w) noexcept;
  static void observe_at_barrier(flow_node* n) noexcept;

  // Running.
  flow_node* execute(flow_node* n, bool from_queue, bool keep_next) noexcept;
  // t: the task's trace, which records each successor made ready (null:
  // the pool is not traced).
  flow_node* release_successors(flow_node* n, bool keep_next, const task_trace* t) noexcept;
  bool take_locks(flow_node* n) noexcept;
  void release_locks(flow_node* n, std::size_t held) noexcept;
  // any_thread: the caller may be a thread the pool does not know (a
  // future's setter), whose push must keep the pool alive.
  void make_ready(flow_node* n, bool any_thread = false) noexcept;
  void queue(flow_node* const* ready, std::size_t n, bool any_thread = false) noexcept;
  void drop_hold(flow_node* n, std::uint8_t k) noexcept;
  void recycle(flow_node* n) noexcept;
  void fail(std::exception_ptr e) noexcept;
  [[nodiscard]] bool stopping() const noexcept;
  void help_towards(flow_node* barrier, const latch& reached);

  // Sequential pools.
  void submit_sequential(flow_node* n, const access_desc* accesses, std::size_t count);
  void run_sequential(const flow_node* last);

  record* start_record(flow_node* n, const char* kind);

  pool* pool_;
  flow_options options_;
  std::size_t workers_;
  bool sequential_;
  bool traced_;                 // the pool records a trace (docs/tracing.md)
  std::uint64_t low_mark_ = 0;  // the window's: a blocked producer resumes at it

  // The unfinished count (low bits) and the blocked producer's wish (top
  // bits); see finish_units().
  alignas(cache_line) std::atomic<std::uint64_t> unfinished_{0};
  // The epoch parity of the unit of pool work the flow holds while
  // unfinished_ is above zero.
  unsigned epoch_ = 0;
  // Stop requests and errors, shared by every task.
  alignas(cache_line) std::atomic<unsigned> status_{0};
  std::mutex error_mutex_;
  std::exception_ptr error_;  // the first, guarded by error_mutex_
  std::recursive_mutex guest_mutex_;

  // Nodes freed by other threads; the producer takes them all at once.
  alignas(cache_line) std::atomic<flow_node*> remote_free_{nullptr};

  // Producer side.
  alignas(cache_line) std::atomic<bool> producing_{false};
  // The blocked producer's parker (wait_until_below()).
  std::atomic<void*> sleeper_{nullptr};
  flow_node* free_ = nullptr;
  std::vector<std::unique_ptr<flow_node[]>> chunks_;
  std::vector<std::size_t> chunk_sizes_;
  std::unique_ptr<object_table> objects_;
  std::uint64_t next_serial_ = 0;
  std::uint64_t mark_ = 0;         // flow_node::mark's current value
  std::vector<node_ref> scratch_;  // one task's predecessors
  std::vector<std::unique_ptr<commute_lock>> locks_;
  std::vector<commute_lock*> idle_locks_;     // of locks_, not held by any object
  std::size_t open_reductions_ = 0;           // objects in a reduce run
  std::vector<flow_node*> sequential_queue_;  // sequential pools: program order
  std::atomic<std::size_t> sequential_size_{0};
  std::vector<std::unique_ptr<record>> records_;  // keep_graph
  // Traced pools: names given to tasks not yet finished, by serial, until
  // the task's slice ends (or the flow's next wait()); docs/tracing.md.
  std::mutex trace_names_mutex_;
  std::unordered_map<std::uint64_t, std::string> trace_names_;
  std::string take_trace_name(std::uint64_t serial);
};

}  // namespace detail
}  // namespace weft
