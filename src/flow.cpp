// weft::flow: dependency inference, the node life cycle and the waits.
// docs/flow.md describes the modes, the edges and the memory orderings.
#include "weft/flow.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

#include "weft/detail/backoff.hpp"
#include "weft/detail/context.hpp"
#include "weft/detail/latch.hpp"
#include "weft/detail/trace.hpp"

namespace weft {
namespace detail {

namespace {

// unfinished_: the count in the low bits; a producer blocked until the
// count is zero, or at most the window's low mark, sets one of the top bits.
// The cancel request lives in the same word, so that cancel() sets it only
// while tasks are unfinished (and wait(), which sees them finish, clears
// it): a cancel never reaches tasks emplaced after the next wait().
constexpr std::uint64_t zero_bit = std::uint64_t{1} << 63;
constexpr std::uint64_t low_bit = std::uint64_t{1} << 62;
constexpr std::uint64_t wish_bits = zero_bit | low_bit;
constexpr std::uint64_t cancel_bit = std::uint64_t{1} << 61;
constexpr std::uint64_t count_mask = cancel_bit - 1;

// status_ bits.
constexpr unsigned failed_bit = 2;

const char* mode_name(access_mode m) noexcept {
  switch (m) {
    case access_mode::read:
      return "read";
    case access_mode::write:
      return "write";
    case access_mode::commute:
      return "commute";
    case access_mode::concurrent:
      return "concurrent";
    case access_mode::reduce:
      return "reduce";
  }
  return "?";
}

bool is_group_mode(access_mode m) noexcept { return m != access_mode::write; }

}  // namespace

std::optional<std::size_t> flow_worker_index(const flow_core& core) noexcept {
  return scheduler::worker_index(core.owner());
}

// ---------------------------------------------------------------------------
// commute_lock

bool commute_lock::acquire_or_park(flow_node* n) {
  std::lock_guard lock{mutex_};
  if (!busy_) {
    busy_ = true;
    return true;
  }
  // Relaxed: the mutex orders it before the releaser's look at it.
  n->phase.store(flow_node::parked, std::memory_order_relaxed);
  parked_.push_back(n);
  return false;
}

flow_node* commute_lock::release() noexcept {
  std::lock_guard lock{mutex_};
  busy_ = false;
  if (parked_.empty()) return nullptr;
  flow_node* n = parked_.back();
  parked_.pop_back();
  return n;
}

// ---------------------------------------------------------------------------
// The producer's view of every object: which tasks form its current segment
// (one writer, or a run of same-mode group accesses) and which the previous.

struct object_state {
  const void* object = nullptr;
  access_mode kind = access_mode::write;
  bool used = false;  // no access yet (kind is meaningless)
  std::vector<node_ref> current;
  std::vector<node_ref> previous;
  node_ref last;  // the newest task that accessed it
  reduction_base* reduction = nullptr;
  reduction_base* (*reduction_kind)(void*, const void*, std::size_t) = nullptr;
  commute_lock* lock = nullptr;
};

namespace {

bool finished(const node_ref& r) noexcept {
  // The producer is the only one that reuses nodes, so a node whose
  // generation moved on has finished. Acquire pairs with the release store
  // of `done` in execute().
  return r.node->generation != r.generation ||
         r.node->phase.load(std::memory_order_acquire) == flow_node::done;
}

void drop_finished(std::vector<node_ref>& refs) {
  refs.erase(std::remove_if(refs.begin(), refs.end(), finished), refs.end());
}

}  // namespace

// Open addressing with linear probing over object addresses; the states live
// in a vector of their own that keeps its capacity.
class flow_core::object_table {
 public:
  object_table() { slots_.assign(64, empty); }

  object_state& find_or_add(const void* object) {
    std::size_t i = home(object);
    for (;;) {
      const std::uint32_t s = slots_[i];
      if (s == empty) break;
      if (states_[s].object == object) return states_[s];
      i = (i + 1) & (slots_.size() - 1);
    }
    if ((used_ + 1) * 2 > slots_.size()) {
      grow();
      return find_or_add(object);
    }
    if (used_ == states_.size()) {
      // A new slot: room for a run of accesses, kept across reuse (slots
      // are handed out again in a different order after wait()).
      states_.emplace_back();
      states_.back().current.reserve(reserved_run);
      states_.back().previous.reserve(reserved_run);
    }
    object_state& st = states_[used_];
    st.object = object;
    st.used = false;
    st.current.clear();
    st.previous.clear();
    st.last = node_ref{};
    st.reduction = nullptr;
    st.reduction_kind = nullptr;
    st.lock = nullptr;
    slots_[i] = static_cast<std::uint32_t>(used_);
    ++used_;
    return st;
  }

  object_state* find(const void* object) noexcept {
    std::size_t i = home(object);
    for (;;) {
      const std::uint32_t s = slots_[i];
      if (s == empty) return nullptr;
      if (states_[s].object == object) return &states_[s];
      i = (i + 1) & (slots_.size() - 1);
    }
  }

  [[nodiscard]] std::size_t size() const noexcept { return used_; }

  template <class F>
  void for_each(F&& f) {
    for (std::size_t i = 0; i < used_; ++i) f(states_[i]);
  }

  void clear() noexcept {
    std::fill(slots_.begin(), slots_.end(), empty);
    used_ = 0;
  }

  // Forgets objects whose every access has finished (and that hold no
  // reduction still to combine): their next access needs no edge.
  // Their commute locks are idle then: they go to `idle_locks`.
  void purge(std::vector<commute_lock*>& idle_locks) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < used_; ++i) {
      object_state& st = states_[i];
      drop_finished(st.current);
      if (st.current.empty() && st.reduction == nullptr) {
        if (st.lock != nullptr) idle_locks.push_back(std::exchange(st.lock, nullptr));
        continue;
      }
      if (kept != i) std::swap(states_[kept], st);
      ++kept;
    }
    used_ = kept;
    rehash(slots_.size());
  }

 private:
  static constexpr std::uint32_t empty = static_cast<std::uint32_t>(-1);
  static constexpr std::size_t reserved_run = 16;

  [[nodiscard]] std::size_t home(const void* object) const noexcept {
    auto h = reinterpret_cast<std::uintptr_t>(object);
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 32;
    return static_cast<std::size_t>(h) & (slots_.size() - 1);
  }

  void grow() { rehash(slots_.size() * 2); }

  void rehash(std::size_t capacity) {
    slots_.assign(capacity, empty);
    for (std::size_t s = 0; s < used_; ++s) {
      std::size_t i = home(states_[s].object);
      while (slots_[i] != empty) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = static_cast<std::uint32_t>(s);
    }
  }

  std::vector<std::uint32_t> slots_;
  std::vector<object_state> states_;
  std::size_t used_ = 0;
};

// keep_graph: one task as dump() shows it.
struct flow_core::record {
  struct edge {
    std::uint64_t from;
    const void* object;  // null: after()
    access_mode mode;
  };
  std::uint64_t serial = 0;
  std::string name;
  const char* kind = nullptr;  // internal tasks: "combine", "wait"
  std::vector<edge> in;
};

// ---------------------------------------------------------------------------
// Construction

flow_core::flow_core(pool& p, const flow_options& options)
    : pool_(&p),
      options_(options),
      workers_(scheduler::workers(p)),
      sequential_(scheduler::sequential(p)),
      traced_(scheduler::traced(p)),
      objects_(std::make_unique<object_table>()) {
  if (options_.window != 0 && options_.window < 2) options_.window = 2;
  low_mark_ = options_.window / 2;
}

flow_core::~flow_core() {
  objects_->for_each([](object_state& st) { delete st.reduction; });
  // Nodes keep their successor blocks across reuse.
  for (std::size_t c = 0; c < chunks_.size(); ++c) {
    for (std::size_t i = 0; i < chunk_sizes_[c]; ++i) {
      successor_block* b = chunks_[c][i].more_successors;
      while (b != nullptr) delete std::exchange(b, b->next);
    }
  }
}

// ---------------------------------------------------------------------------
// Producer side

void flow_core::enter_producer() {
  // Relaxed: a cheap check that catches most overlapping calls, not all
  // (docs/flow.md): the program order is one thread's order.
  if (producing_.load(std::memory_order_relaxed)) {
    throw usage_error(
        "weft::flow: emplace/wait called by two threads at once; a flow has one producer (its "
        "program order is that thread's order): emplace from one thread at a time");
  }
  producing_.store(true, std::memory_order_relaxed);
}

void flow_core::leave_producer() noexcept { producing_.store(false, std::memory_order_relaxed); }

flow_node* flow_core::allocate() {
  enter_producer();
  if (free_ == nullptr) {
    // Acquire pairs with the release CAS in recycle(): the last runner's
    // writes to the nodes are visible before we reuse them.
    free_ = remote_free_.exchange(nullptr, std::memory_order_acquire);
  }
  if (free_ == nullptr) {
    try {
      const std::size_t n = std::size_t{64} << std::min<std::size_t>(chunks_.size(), 6);
      chunks_.reserve(chunks_.size() + 1);
      chunk_sizes_.reserve(chunk_sizes_.size() + 1);
      auto chunk = std::make_unique<flow_node[]>(n);
      for (std::size_t i = 0; i < n; ++i) {
        chunk[i].owner = this;
        chunk[i].run = &run_node;
        // Room for the usual task, kept across reuse: a warmed-up flow
        // allocates nothing per task (tests/alloc checks it).
        chunk[i].locks.reserve(flow_node::reserved_locks);
        chunk[i].more_predecessors.reserve(flow_node::reserved_predecessors);
        chunk[i].free_next = i + 1 < n ? &chunk[i + 1] : nullptr;
      }
      free_ = &chunk[0];
      chunks_.push_back(std::move(chunk));
      chunk_sizes_.push_back(n);
    } catch (...) {
      leave_producer();
      throw;
    }
  }
  flow_node* n = free_;
  free_ = n->free_next;
  ++n->generation;
  n->serial = ++next_serial_;
  n->call = nullptr;
  n->destroy = nullptr;
  n->combine = nullptr;
  n->barrier = nullptr;
  n->predecessor_count = 0;
  n->more_predecessors.clear();
  n->locks.clear();
  n->future_edge_waiter.node = nullptr;
  n->stale_entry = false;
  n->waits_for_future = false;
  // Relaxed: published by the release CAS that links the node behind a
  // predecessor, or by the push that queues it.
  n->successors_state.store(0, std::memory_order_relaxed);
  n->phase.store(flow_node::waiting, std::memory_order_relaxed);
  n->holds.store(0, std::memory_order_relaxed);
  return n;
}

void flow_core::unallocate(flow_node* n) noexcept {
  n->free_next = free_;
  free_ = n;
  --next_serial_;
  leave_producer();
}

void flow_core::count_unfinished(std::uint64_t k) {
  // acq_rel: acquire pairs with the finishers' release decrements, so the
  // tasks of the previous busy period are visible before a new one starts;
  // release is not needed (the pushes publish the tasks).
  const std::uint64_t old = unfinished_.fetch_add(k, std::memory_order_acq_rel);
  if ((old & count_mask) == 0) start_unit(k);
}

void flow_core::start_unit(std::uint64_t k) {
  // The flow was idle: it holds one unit of the pool's work while it has
  // unfinished tasks, so pool::wait() and the pool's destructor wait for
  // them.
  scheduler::unit u{};
  try {
    u = scheduler::enter(*pool_);
  } catch (...) {
    // Relaxed: nothing ran in between (the count was zero).
    unfinished_.fetch_sub(k, std::memory_order_relaxed);
    throw;
  }
  epoch_ = u.epoch();
  // The unit (held until the count is zero again) keeps the pool alive for
  // the rest of this call too.
  scheduler::end_submission(*pool_, u);
}

void flow_core::finish_units(std::uint64_t k) noexcept {
  // Read before the decrement: once the count is zero the flow may go.
  pool* const p = pool_;
  const unsigned epoch = epoch_;
  const std::uint64_t low = low_mark_;
  // The decrement and the taking of a wish it fulfils are one step, so a
  // finisher that takes no wish never touches the flow again: once the
  // count is low enough the producer may return and the flow go.
  // seq_cst: with the producer's seq_cst fetch_or of a wish bit in
  // wait_until_below(), either it sees our count or we see its wish.
  std::uint64_t old = unfinished_.load(std::memory_order_relaxed);
  bool wake = false;
  std::uint64_t next = 0;
  do {
    const std::uint64_t left = (old & count_mask) - k;
    wake = ((old & zero_bit) != 0 && left == 0) || ((old & low_bit) != 0 && left <= low);
    next = (old - k) & (wake ? ~wish_bits : ~std::uint64_t{0});
  } while (!unfinished_.compare_exchange_weak(old, next, std::memory_order_seq_cst,
                                              std::memory_order_relaxed));
  if (wake) {
    // We took the wish: the producer stays parked until our unpark, so the
    // flow is still there. Acquire pairs with the producer's release store
    // before its wish.
    static_cast<parker*>(sleeper_.load(std::memory_order_acquire))->unpark();
  }
  if ((old & count_mask) == k) scheduler::leave(*p, epoch);
}

void flow_core::submit(flow_node* n, const access_desc* accesses, std::size_t count) {
  const producer_scope scope{*this};
  try {
    validate(accesses, count);
    if (!sequential_ && options_.window != 0 &&
        (unfinished_.load(std::memory_order_relaxed) & count_mask) >= options_.window) {
      wait_until_below(low_mark_, low_bit);
    }
    // The pool outlives the flow (a documented rule), so the task may finish
    // and the unit end while this thread still pushes: nothing is freed.
    if (!sequential_) count_unfinished(1);
  } catch (...) {
    give_back(n);
    throw;
  }
  if (sequential_) {
    submit_sequential(n, accesses, count);  // deals with its own failures
    return;
  }
  try {
    record* rec = options_.keep_graph ? start_record(n, nullptr) : nullptr;
    collect_predecessors(n, accesses, count, rec);
  } catch (...) {
    // Out of memory part of the way: the task is counted and some objects
    // may already list it, so it still runs, as a no-op after the
    // predecessors found so far (those of the objects that list it).
    disarm(n);
    link_and_release(n, nullptr, 0);
    throw;
  }
  link_and_release(n, accesses, count);
}

// A node no object or count knows of yet goes back to the free list.
void flow_core::give_back(flow_node* n) noexcept {
  if (n->destroy != nullptr) n->destroy(n);
  n->free_next = free_;
  free_ = n;
}

void flow_core::validate(const access_desc* accesses, std::size_t count) const {
  for (std::size_t i = 0; i < count; ++i) {
    const access_desc& a = accesses[i];
    if (a.is_after) {
      if (a.after_node != nullptr && a.after_node->owner != this) {
        throw usage_error(
            "weft::after(flow_task): the task belongs to another flow; order tasks of "
            "different flows with a future or a wait()");
      }
      continue;
    }
    if (a.mode != access_mode::reduce) continue;
    for (std::size_t j = 0; j < count; ++j) {
      if (j != i && !accesses[j].is_after && accesses[j].object == a.object) {
        throw usage_error(
            "weft::flow::emplace: an object declared with reduce() cannot be declared again in "
            "the same task; the task gets a private copy, so declare it once");
      }
    }
  }
}

// Runs the task's body unless the flow is stopping, then finish_body().
void flow_core::run_body(flow_node* n) noexcept {
  if (!stopping()) {
    try {
      if (n->call != nullptr) {
        n->call(n);
      } else if (n->combine != nullptr) {
        n->combine->combine();
      }
    } catch (...) {
      fail(std::current_exception());
    }
  }
  finish_body(n);
}

// The callable and its captures go before anybody waiting for the task is
// released; so does a combine task's reduction.
void flow_core::finish_body(flow_node* n) noexcept {
  if (n->destroy != nullptr) n->destroy(n);
  delete std::exchange(n->combine, nullptr);
}

void flow_core::disarm(flow_node* n) noexcept {
  if (n->destroy != nullptr) n->destroy(n);
  n->destroy = nullptr;
  n->call = nullptr;
  n->locks.clear();
}

// A reduce run ends at the first other access to its object (or a reduce
// with another operation).
void flow_core::close_reductions_of(const access_desc* accesses, std::size_t count) {
  if (open_reductions_ == 0) return;
  for (std::size_t i = 0; i < count; ++i) {
    const access_desc& a = accesses[i];
    if (a.is_after) continue;
    object_state* st = objects_->find(a.object);
    if (st != nullptr && st->used && st->kind == access_mode::reduce &&
        (a.mode != access_mode::reduce || a.make_reduction != st->reduction_kind)) {
      close_reduction(*st);
    }
  }
}

void flow_core::collect_predecessors(flow_node* n, const access_desc* accesses, std::size_t count,
                                     record* rec) {
  close_reductions_of(accesses, count);
  scratch_.clear();
  ++mark_;
  for (std::size_t i = 0; i < count; ++i) {
    const access_desc& a = accesses[i];
    if (a.is_after) {
      if (a.after_node != nullptr) {
        add_predecessor(n, node_ref{a.after_node, a.after_generation}, nullptr, access_mode::write,
                        rec);
      }
      continue;
    }
    object_state& st = objects_->find_or_add(a.object);
    const bool joins = st.used && is_group_mode(a.mode) && st.kind == a.mode;
    if (joins) {
      for (const node_ref& r : st.previous) add_predecessor(n, r, a.object, a.mode, rec);
      if (st.current.size() == st.current.capacity()) drop_finished(st.current);
    } else {
      for (const node_ref& r : st.current) add_predecessor(n, r, a.object, a.mode, rec);
      if (is_group_mode(a.mode)) {
        // Later members of the run wait for the same tasks as this one.
        st.previous.swap(st.current);
        drop_finished(st.previous);
      }
      st.current.clear();
      if (a.mode == access_mode::reduce) ++open_reductions_;
      st.kind = a.mode;
      st.used = true;
    }
    st.current.push_back(node_ref{n, n->generation});
    st.last = node_ref{n, n->generation};
    if (a.mode == access_mode::commute) {
      if (st.lock == nullptr) st.lock = new_lock();
      if (std::find(n->locks.begin(), n->locks.end(), st.lock) == n->locks.end()) {
        n->locks.push_back(st.lock);
      }
    } else if (a.mode == access_mode::reduce) {
      if (st.reduction == nullptr) {
        st.reduction = a.make_reduction(const_cast<void*>(a.object), a.op, workers_);
        st.reduction_kind = a.make_reduction;
      }
      *a.bind = st.reduction;
    }
  }
  // Locks are taken in address order, so two tasks never wait for each other.
  if (n->locks.size() > 1) std::sort(n->locks.begin(), n->locks.end());
  if (objects_->size() > purge_threshold()) {
    idle_locks_.reserve(locks_.size());  // so that purge() cannot fail half-way
    objects_->purge(idle_locks_);
  }
}

std::size_t flow_core::purge_threshold() const noexcept {
  return std::max<std::size_t>(1024, options_.window * 4);
}

void flow_core::add_predecessor(flow_node* n, node_ref r, const void* object, access_mode mode,
                                record* rec) {
  // A reused node has finished. A finished one that is not reused yet is
  // found by link(), whose CAS fails on its closed list.
  if (r.node == n || r.node->generation != r.generation) return;
  if (rec != nullptr) rec->in.push_back(record::edge{r.node->serial, object, mode});
  if (r.node->mark == mark_) return;  // already a predecessor
  r.node->mark = mark_;
  scratch_.push_back(r);
}

commute_lock* flow_core::new_lock() {
  if (idle_locks_.empty()) {
    idle_locks_.reserve(locks_.size() + 1);
    locks_.push_back(std::make_unique<commute_lock>());
    return locks_.back().get();
  }
  commute_lock* l = idle_locks_.back();
  idle_locks_.pop_back();
  return l;
}

// A reduce run ends: an internal task folds the private copies into the
// object after every task of the run, and becomes the object's writer.
void flow_core::close_reduction(object_state& st) {
  flow_node* const last_member = st.last.node;
  if (sequential_) sequential_queue_.reserve(sequential_queue_.size() + 1);
  flow_node* c = allocate_internal();
  c->combine = st.reduction;
  record* rec = start_record(c, "combine");
  scratch_.clear();
  ++mark_;
  for (const node_ref& r : st.current) add_predecessor(c, r, st.object, access_mode::reduce, rec);
  // The reduction now belongs to the combine task (finish_body() deletes
  // it); the object may start a new one.
  --open_reductions_;
  st.reduction = nullptr;
  st.reduction_kind = nullptr;
  st.previous.swap(st.current);
  st.current.assign(1, node_ref{c, c->generation});
  st.kind = access_mode::write;
  st.last = node_ref{c, c->generation};
  if (sequential_) {
    // Right after the run's last task, so that wait(x) runs no task
    // emplaced after it (tasks in between do not touch x).
    auto at = std::find(sequential_queue_.begin(), sequential_queue_.end(), last_member);
    if (at != sequential_queue_.end()) ++at;
    sequential_queue_.insert(at, c);
    sequential_size_.store(sequential_queue_.size(), std::memory_order_relaxed);
  } else {
    count_unfinished(1);
    link_and_release(c, nullptr, 0);
  }
}

flow_node* flow_core::allocate_internal() {
  // allocate() marks the producer busy; internal tasks are made while it is.
  leave_producer();
  return allocate();
}

// Links n behind every predecessor in scratch_ that has not finished, and
// subscribes it to the futures it waits for; makes it ready when nothing is
// left to wait for.
void flow_core::link_and_release(flow_node* n, const access_desc* accesses, std::size_t count) {
  const std::int32_t futures = count_futures(accesses, count);
  // Everything that may allocate comes before the first link: once the
  // last link or subscription is in, the task may run and its node be
  // reused, so nothing of it is touched after that.
  try {
    for (const node_ref& r : scratch_) remember_predecessor(n, r);
    prepare_future_waiters(n, futures);
  } catch (...) {
    // No memory to record the edges: let the task wait right here for what
    // it depends on, then run it with nothing left to wait for.
    for (const node_ref& r : scratch_) await_finished(r);
    for (std::size_t i = 0; i < count; ++i) {
      if (accesses[i].is_after && accesses[i].after_latch != nullptr) {
        scheduler::await(*pool_, *accesses[i].after_latch);
      }
    }
    n->predecessor_count = 0;
    n->more_predecessors.clear();
    n->pending.store(0, std::memory_order_relaxed);
    make_ready(n);
    return;
  }
  n->waits_for_future = futures != 0;
  const auto units = static_cast<std::int32_t>(scratch_.size()) + futures;
  if (units == 0) {
    make_ready(n);
    return;
  }
  // One unit per predecessor and future, no guard: a unit not linked yet
  // cannot be counted off, so the task cannot become ready before the last
  // link. Relaxed: published by the release CAS in link() or subscribe().
  n->pending.store(units, std::memory_order_relaxed);
  std::int32_t missed = 0;
  for (const node_ref& r : scratch_) {
    if (!link(r.node, n)) ++missed;
  }
  if (futures != 0) missed += subscribe_futures(n, accesses, count);
  // The common case (every link held) needs no read-modify-write here: the
  // last predecessor to finish makes the task ready. acq_rel: acquire sees
  // the work of the predecessors that finished before we linked; release
  // hands our links to whoever makes the task ready.
  if (missed != 0 && n->pending.fetch_sub(missed, std::memory_order_acq_rel) == missed) {
    make_ready(n);
  }
}

void flow_core::await_finished(const node_ref& r) {
  auto done = [&r] { return finished(r); };
  scheduler::wait_for(*pool_, done, [&] {
    backoff wait;
    while (!done()) wait.pause();
  });
}

std::int32_t flow_core::count_futures(const access_desc* accesses, std::size_t count) noexcept {
  std::int32_t futures = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (accesses[i].is_after && accesses[i].after_latch != nullptr) ++futures;
  }
  return futures;
}

// Waiters for a task's futures beyond the first (the node has one of its
// own); the node keeps them, and their memory, for its next tasks.
void flow_core::prepare_future_waiters(flow_node* n, std::int32_t futures) {
  if (futures > 1) n->extra_waiters.resize(static_cast<std::size_t>(futures - 1));
}

void flow_core::remember_predecessor(flow_node* n, node_ref r) {
  if (n->predecessor_count < flow_node::inline_predecessors) {
    n->predecessors[n->predecessor_count++] = r;
  } else {
    n->more_predecessors.push_back(r);
  }
}

// Returns how many of the task's futures were ready already.
std::int32_t flow_core::subscribe_futures(flow_node* n, const access_desc* accesses,
                                          std::size_t count) {
  std::int32_t ready = 0;
  bool own_waiter_used = false;
  std::int32_t extra = 0;  // the next of the node's extra waiters
  for (std::size_t i = 0; i < count; ++i) {
    const access_desc& a = accesses[i];
    if (!a.is_after || a.after_latch == nullptr) continue;
    latch& l = const_cast<latch&>(*a.after_latch);
    flow_node::future_edge* w = nullptr;
    if (!own_waiter_used) {
      w = &n->future_edge_waiter;
      own_waiter_used = true;
    } else {
      // A second future: one of the node's extra waiters
      // (prepare_future_waiters).
      w = &n->extra_waiters[static_cast<std::size_t>(extra++)];
    }
    w->node = n;
    w->notify = &on_future_ready;
    if (!l.subscribe(w)) ++ready;
  }
  return ready;
}

void flow_core::on_future_ready(latch_waiter* w) noexcept {
  flow_node* n = static_cast<flow_node::future_edge*>(w)->node;
  flow_core* core = n->owner;
  // Read first: in a sequential flow the task may run (and the flow go)
  // as soon as the count is zero.
  const bool queue_it = !core->sequential_;
  // acq_rel: as a predecessor's decrement in execute(); a sequential
  // flow's runner acquires it. The task is unfinished until it has run, so
  // the flow is there until the push below has made it runnable; the pool
  // is kept by the guarded publish, since the notifier may be any thread
  // (one of another pool's workers, say) and the push touches the pool
  // after it publishes.
  if (n->pending.fetch_sub(1, std::memory_order_acq_rel) == 1 && queue_it) {
    core->make_ready(n, true);
  }
}

bool flow_core::link(flow_node* from, flow_node* to) {
  // Acquire pairs with the finisher's acq_rel fetch_or in
  // release_successors(): a closed list means `from` has finished, and its
  // work must be visible to whoever runs `to`. Only this thread (the
  // producer) grows the count; the CAS below checks the closed bit again.
  std::uint32_t s = from->successors_state.load(std::memory_order_acquire);
  if ((s & flow_node::closed) != 0) return false;
  const std::uint32_t k = s >> 1;
  if (k < flow_node::inline_successors) {
    from->successors[k] = to;
  } else {
    std::uint32_t i = k - flow_node::inline_successors;
    successor_block** b = &from->more_successors;
    for (;;) {
      if (*b == nullptr) {
        successor_block* fresh = nullptr;
        try {
          fresh = new successor_block;
        } catch (const std::bad_alloc&) {
          // No memory for the edge: wait until `from` has finished, which
          // makes the edge unnecessary.
          await_finished(node_ref{from, from->generation});
          return false;
        }
        *b = fresh;
      }
      if (i < successor_block::size) break;
      i -= successor_block::size;
      b = &(*b)->next;
    }
    (*b)->slots[i] = to;
  }
  // Release publishes the slot (and a fresh block) to the finisher's
  // acq_rel fetch_or in execute(); acquire on failure pairs with that
  // fetch_or, so a closed predecessor's work is visible to us.
  return from->successors_state.compare_exchange_strong(s, s + 2, std::memory_order_release,
                                                        std::memory_order_acquire);
}

// ---------------------------------------------------------------------------
// Running

void flow_core::make_ready(flow_node* n, bool any_thread) noexcept {
  n->holds.store(2, std::memory_order_relaxed);
  // Release: wait(x) may claim the task without the push (help_towards's
  // acquire CAS); this thread saw every predecessor's work (its acq_rel
  // decrement of pending, or the producer's own view), so the claimer does
  // too. The holds store above goes with it.
  n->phase.store(flow_node::queued, std::memory_order_release);
  queue(&n, 1, any_thread);
}

void flow_core::queue(flow_node* const* ready, std::size_t n, bool any_thread) noexcept {
  pool& p = *pool_;
  std::array<job*, 64> jobs;
  std::size_t i = 0;
  while (i < n) {
    const std::size_t batch = std::min(n - i, jobs.size());
    for (std::size_t j = 0; j < batch; ++j) jobs[j] = ready[i + j];
    // A task that cannot be queued (no memory for a queue to grow) runs here.
    const std::size_t pushed = any_thread ? scheduler::publish_guarded(p, jobs.data(), batch)
                                          : scheduler::publish(p, jobs.data(), batch);
    for (std::size_t j = pushed; j < batch; ++j) run_node(jobs[j]);
    i += batch;
  }
}

void flow_core::run_node(job* j) noexcept {
  auto* n = static_cast<flow_node*>(j);
  flow_core& core = *n->owner;
  std::uint8_t expected = flow_node::queued;
  // acquire pairs with make_ready's publication through the queue and
  // with a waiter's claim; relaxed would do for the phase alone.
  if (!n->phase.compare_exchange_strong(expected, flow_node::running, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
    // wait(x) ran it already: only our queue entry's hold is left to drop.
    core.drop_hold(n, 1);
    return;
  }
  const running_scope running{core.pool_, core.epoch_};
  bool from_queue = true;
  while (n != nullptr) {
    n = core.execute(n, from_queue, true);
    from_queue = false;
  }
}

bool flow_core::stopping() const noexcept {
  // Relaxed: a stop only has to be seen eventually.
  return (status_.load(std::memory_order_relaxed) & failed_bit) != 0 ||
         (unfinished_.load(std::memory_order_relaxed) & cancel_bit) != 0;
}

void flow_core::fail(std::exception_ptr e) noexcept {
  // Relaxed: see stopping(); the error itself is under the mutex.
  status_.fetch_or(failed_bit, std::memory_order_relaxed);
  std::lock_guard lock{error_mutex_};
  if (!error_) error_ = std::move(e);
}

bool flow_core::take_locks(flow_node* n) noexcept {
  for (std::size_t i = 0; i < n->locks.size(); ++i) {
    bool taken = false;
    try {
      taken = n->locks[i]->acquire_or_park(n);
    } catch (...) {
      // No memory to park: spin for the lock instead.
      backoff wait;
      while (!(taken = n->locks[i]->try_acquire())) wait.pause();
    }
    if (!taken) {
      release_locks(n, i);
      return false;
    }
  }
  return true;
}

void flow_core::release_locks(flow_node* n, std::size_t held) noexcept {
  for (std::size_t i = 0; i < held; ++i) {
    if (flow_node* parked = n->locks[i]->release()) {
      // Back to a queue: it tries its locks again when it runs. Relaxed:
      // the parked task holds one unit until it runs, so the count cannot
      // reach zero meanwhile; the push publishes both stores.
      parked->holds.fetch_add(1, std::memory_order_relaxed);
      // Release: as in make_ready().
      parked->phase.store(flow_node::queued, std::memory_order_release);
      queue(&parked, 1);
    }
  }
}

flow_node* flow_core::execute(flow_node* n, bool from_queue, bool keep_next) noexcept {
  if (!n->locks.empty() && !take_locks(n)) {
    // Parked on a commute lock: its releaser queues the task again.
    if (from_queue) drop_hold(n, 1);
    return nullptr;
  }
  std::optional<task_trace> traced;
  if (traced_) [[unlikely]] {
    char label[24];
    const int len = std::snprintf(label, sizeof(label), "%s #%llu",
                                  n->combine != nullptr ? "combine" : "flow task",
                                  static_cast<unsigned long long>(n->serial));
    // A task is identified to the edges that release it by its address.
    traced.emplace(std::string_view{label, static_cast<std::size_t>(std::max(len, 0))},
                   reinterpret_cast<std::uintptr_t>(n));
  }
  run_body(n);
  release_locks(n, n->locks.size());
  // Release pairs with the acquire loads in finished() and in wait(x)'s
  // walk: the task's effects are visible to whoever sees it done.
  n->phase.store(flow_node::done, std::memory_order_release);
  flow_node* next = release_successors(n, keep_next, traced ? &*traced : nullptr);
  if (traced && traced->active()) {
    // Named now rather than at the start: the producer names a task after
    // emplace() returned it, often while it already runs.
    const std::string name = take_trace_name(n->serial);
    if (!name.empty()) traced->rename(name);
  }
  traced.reset();  // the slice ends before the node can be reused
  if (latch* barrier = n->barrier) barrier->set();
  if (n->stale_entry || !n->locks.empty()) {
    // Other holders may exist: a queue entry left behind when wait(x)
    // claimed the task, or one made when it was parked on a commute lock
    // while its parking thread had not dropped its own hold yet.
    drop_hold(n, from_queue ? 2 : 1);
  } else {
    // Ours alone: the queue entry we came through (if any) is the only
    // one, so no other thread can touch the node now.
    recycle(n);
  }
  return next;
}

flow_node* flow_core::release_successors(flow_node* n, bool keep_next,
                                         const task_trace* t) noexcept {
  // acq_rel: acquire pairs with the producer's release CAS in link(), so
  // the slots are visible; release hands this task's effects to the
  // producer when its link() fails.
  const std::uint32_t s =
      n->successors_state.fetch_or(flow_node::closed, std::memory_order_acq_rel);
  const std::uint32_t k = s >> 1;
  flow_node* next = nullptr;
  std::array<flow_node*, 64> ready;
  std::size_t n_ready = 0;
  const successor_block* block = nullptr;
  for (std::uint32_t i = 0; i < k; ++i) {
    flow_node* succ = nullptr;
    if (i < flow_node::inline_successors) {
      succ = n->successors[i];
    } else {
      // Read only past the inline slots: the producer may be writing the
      // pointer for a link that our close makes fail.
      const std::uint32_t j = (i - flow_node::inline_successors) % successor_block::size;
      if (i == flow_node::inline_successors) {
        block = n->more_successors;
      } else if (j == 0) {
        block = block->next;
      }
      succ = block->slots[j];
    }
    // acq_rel: release publishes this task's effects to the successor;
    // acquire, on the decrement that makes it ready, sees the others'.
    if (succ->pending.fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
    if (t != nullptr) t->released(reinterpret_cast<std::uintptr_t>(succ));
    if (keep_next && next == nullptr) {
      // Runs next on this thread, never queued: nobody else can claim it.
      succ->phase.store(flow_node::running, std::memory_order_relaxed);
      succ->holds.store(1, std::memory_order_relaxed);
      next = succ;
      continue;
    }
    succ->holds.store(2, std::memory_order_relaxed);
    // Release: as in make_ready().
    succ->phase.store(flow_node::queued, std::memory_order_release);
    ready[n_ready++] = succ;
    if (n_ready == ready.size()) {
      queue(ready.data(), n_ready);
      n_ready = 0;
    }
  }
  if (n_ready != 0) queue(ready.data(), n_ready);
  return next;
}

void flow_core::drop_hold(flow_node* n, std::uint8_t k) noexcept {
  // acq_rel: the last holder sees every other holder's use of the node.
  if (n->holds.fetch_sub(k, std::memory_order_acq_rel) == k) recycle(n);
}

void flow_core::recycle(flow_node* n) noexcept {
  flow_node* head = remote_free_.load(std::memory_order_relaxed);
  do {
    n->free_next = head;
    // Release pairs with the producer's acquire exchange in allocate().
  } while (!remote_free_.compare_exchange_weak(head, n, std::memory_order_release,
                                               std::memory_order_relaxed));
  finish_units(1);  // last: the flow may go once its count is zero
}

// ---------------------------------------------------------------------------
// Waiting

void flow_core::wait_until_below(std::uint64_t limit, std::uint64_t wish) {
  auto done = [this, limit] {
    // Acquire pairs with the finishers' decrements: their tasks' effects
    // are visible once we see the count low enough.
    return (unfinished_.load(std::memory_order_acquire) & count_mask) <= limit;
  };
  scheduler::wait_for(*pool_, done, [&] {
    parker& self = parker::current();
    // Release pairs with the finisher's acquire load of sleeper_.
    sleeper_.store(&self, std::memory_order_release);
    for (;;) {
      // seq_cst: see finish_units().
      const std::uint64_t old = unfinished_.fetch_or(wish, std::memory_order_seq_cst);
      if ((old & count_mask) <= limit) {
        // Low enough already: take the wish back, unless a finisher took it
        // first and owes us exactly one unpark.
        if ((unfinished_.fetch_and(~wish, std::memory_order_acq_rel) & wish) == 0) self.park();
        return;
      }
      self.park();  // a finisher cleared the wish and unparked us
      if (done()) return;
    }
  });
}

void flow_core::close_all_reductions() {
  objects_->for_each([this](object_state& st) {
    if (st.used && st.kind == access_mode::reduce) close_reduction(st);
  });
}

std::string flow_core::take_trace_name(std::uint64_t serial) {
  std::lock_guard lock{trace_names_mutex_};
  auto node = trace_names_.extract(serial);
  return node.empty() ? std::string{} : std::move(node.mapped());
}

void flow_core::wait() {
  enter_producer();
  const producer_scope scope{*this};
  drain();
  if (traced_) {
    // Names that came after their task's slice ended: nobody takes them.
    std::lock_guard lock{trace_names_mutex_};
    trace_names_.clear();
  }
  rethrow_and_reset();
}

void flow_core::drain() {
  close_all_reductions();
  drain_without_reductions();
}

void flow_core::drain_without_reductions() {
  if (sequential_) {
    run_sequential(nullptr);
  } else {
    wait_until_below(0, zero_bit);
  }
  // Every task has finished: the producer's state starts afresh.
  objects_->for_each([](object_state& st) { delete st.reduction; });
  objects_->clear();
  open_reductions_ = 0;
  idle_locks_.clear();
  for (auto& l : locks_) {
    l->reset();
    idle_locks_.push_back(l.get());  // capacity reserved by new_lock()
  }
  records_.clear();
}

void flow_core::rethrow_and_reset() {
  std::exception_ptr e;
  {
    std::lock_guard lock{error_mutex_};
    e = std::exchange(error_, nullptr);
  }
  // Relaxed: no task runs now.
  status_.store(0, std::memory_order_relaxed);
  const bool cancelled =
      (unfinished_.fetch_and(~cancel_bit, std::memory_order_relaxed) & cancel_bit) != 0;
  if (e) std::rethrow_exception(e);
  if (cancelled) {
    throw run_cancelled("weft::flow: cancel() skipped the tasks that had not started");
  }
}

void flow_core::report_left_errors() noexcept {
  std::exception_ptr e;
  {
    std::lock_guard lock{error_mutex_};
    e = std::exchange(error_, nullptr);
  }
  if (e) scheduler::report_error(*pool_, std::move(e));
}

bool flow_core::cancel() noexcept {
  // The request is set only in a word whose count shows unfinished tasks
  // (see cancel_bit). Relaxed: tasks only have to see it eventually
  // (stopping()), and wait() reads it after the count reached zero, later
  // in the word's modification order.
  std::uint64_t old = unfinished_.load(std::memory_order_relaxed);
  do {
    const bool busy =
        (old & count_mask) != 0 || sequential_size_.load(std::memory_order_relaxed) != 0;
    if (!busy) return false;
  } while (!unfinished_.compare_exchange_weak(old, old | cancel_bit, std::memory_order_relaxed));
  return true;
}

void flow_core::wait_for_object(const void* object) {
  enter_producer();
  const producer_scope scope{*this};
  object_state* st = objects_->find(object);
  if (st == nullptr || !st->used) return;
  if (st->kind == access_mode::reduce) close_reduction(*st);
  if (sequential_) {
    if (!finished(st->last)) run_sequential(st->last.node);
    return;
  }
  // A barrier task after every access to the object so far; it is not an
  // access itself, so later tasks do not wait for it.
  latch reached;
  flow_node* b = allocate_internal();
  b->barrier = &reached;
  record* rec = start_record(b, "wait");
  scratch_.clear();
  ++mark_;
  for (const node_ref& r : st->current) add_predecessor(b, r, object, access_mode::read, rec);
  count_unfinished(1);
  link_and_release(b, nullptr, 0);
  if (scheduler::on_worker_of(*pool_)) {
    help_towards(b, reached);
  } else {
    scheduler::await(*pool_, reached);
  }
}

// On a worker: runs the barrier's unfinished ancestors that are queued
// (claiming them from their queue entries), and nothing else, until the
// barrier is reached.
void flow_core::help_towards(flow_node* barrier, const latch& reached) {
  backoff wait;
  std::vector<flow_node*> stack;
  while (!reached.is_set()) {
    bool ran = false;
    flow_node* on_future = nullptr;  // an ancestor that waits for a future
    // Claims and runs n if it is queued; walks on to its predecessors if it
    // still waits for them.
    auto visit = [&](const node_ref& r) {
      if (ran || r.node->generation != r.generation || r.node->mark == mark_) return;
      r.node->mark = mark_;
      // Acquire: see finished().
      std::uint8_t phase = r.node->phase.load(std::memory_order_acquire);
      if (phase == flow_node::queued &&
          r.node->phase.compare_exchange_strong(
              phase, flow_node::running, std::memory_order_acquire, std::memory_order_relaxed)) {
        const running_scope running{pool_, epoch_};
        r.node->stale_entry = true;     // its queue entry is still out there
        execute(r.node, false, false);  // queues its ready successors
        ran = true;
      } else if (phase == flow_node::waiting) {
        if (r.node->waits_for_future && on_future == nullptr) on_future = r.node;
        stack.push_back(r.node);
      }
    };
    ++mark_;
    stack.clear();
    visit(node_ref{barrier, barrier->generation});
    while (!stack.empty() && !ran) {
      const flow_node* n = stack.back();
      stack.pop_back();
      for (std::uint32_t i = 0; i < n->predecessor_count; ++i) visit(n->predecessors[i]);
      for (const node_ref& r : n->more_predecessors) visit(r);
    }
    if (ran) {
      wait.reset();
    } else if (on_future != nullptr) {
      // The future's job may sit in this very worker's queue: run jobs of
      // the pool (any of them) until that task is ready or x is.
      auto unblocked = [&] {
        // Acquire: see finished().
        return reached.is_set() || on_future->pending.load(std::memory_order_acquire) == 0;
      };
      scheduler::wait_for(*pool_, unblocked, [&] {
        while (!unblocked()) wait.pause();
      });
      wait.reset();
    } else {
      wait.pause();
    }
  }
}

// Sequential pools: the tasks run in program order on the waiting thread.
void flow_core::submit_sequential(flow_node* n, const access_desc* accesses, std::size_t count) {
  try {
    sequential_queue_.reserve(sequential_queue_.size() + 1);
  } catch (...) {
    give_back(n);
    throw;
  }
  try {
    record* rec = options_.keep_graph ? start_record(n, nullptr) : nullptr;
    collect_predecessors(n, accesses, count, rec);
    // Futures are waited for through the node's count, as in a parallel
    // run: the latch itself may be gone by the time the task runs.
    const std::int32_t futures = count_futures(accesses, count);
    prepare_future_waiters(n, futures);
    n->pending.store(futures, std::memory_order_relaxed);
    if (futures != 0) {
      const std::int32_t ready = subscribe_futures(n, accesses, count);
      // acq_rel: as on_future_ready().
      if (ready != 0) n->pending.fetch_sub(ready, std::memory_order_acq_rel);
    }
  } catch (...) {
    disarm(n);
    n->pending.store(0, std::memory_order_relaxed);
    sequential_queue_.push_back(n);  // reserved above
    sequential_size_.store(sequential_queue_.size(), std::memory_order_relaxed);
    throw;
  }
  sequential_queue_.push_back(n);
  sequential_size_.store(sequential_queue_.size(), std::memory_order_relaxed);
  if (options_.window != 0 && sequential_queue_.size() >= options_.window) run_sequential(nullptr);
}

// Runs the queued tasks in program order, up to and including `last` (all
// of them when null).
void flow_core::run_sequential(const flow_node* last) {
  std::size_t i = 0;
  bool reached = false;
  struct consumed {
    flow_core& core;
    std::size_t& i;
    ~consumed() {
      auto& q = core.sequential_queue_;
      q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(i));
      core.sequential_size_.store(q.size(), std::memory_order_relaxed);
    }
  } guard{*this, i};
  for (; i < sequential_queue_.size() && !reached; ++i) {
    flow_node* n = sequential_queue_[i];
    reached = n == last;
    // Acquire pairs with on_future_ready()'s decrement.
    auto ready = [n] { return n->pending.load(std::memory_order_acquire) == 0; };
    if (!ready()) {
      scheduler::wait_for(*pool_, ready, [&] {
        backoff wait;
        while (!ready()) wait.pause();
      });
    }
    run_body(n);
    n->phase.store(flow_node::done, std::memory_order_relaxed);
    n->free_next = free_;
    free_ = n;
  }
}

// ---------------------------------------------------------------------------
// dump

flow_core::record* flow_core::start_record(flow_node* n, const char* kind) {
  if (!options_.keep_graph) return nullptr;
  records_.push_back(std::make_unique<record>());
  record* r = records_.back().get();
  r->serial = n->serial;
  r->kind = kind;
  return r;
}

void flow_core::set_name(flow_node* n, std::uint32_t generation, std::string_view name) {
  // The producer's own fields (generation, serial): no other thread writes them.
  if (traced_ && n->generation == generation &&
      // Acquire pairs with the release store of `done` in execute(): a
      // finished task's slice is written already.
      n->phase.load(std::memory_order_acquire) != flow_node::done) {
    std::lock_guard lock{trace_names_mutex_};
    trace_names_.insert_or_assign(n->serial, std::string{name});
  }
  if (!options_.keep_graph || n->generation != generation) return;
  const std::uint64_t serial = n->serial;
  // The newest first: a handle is usually named right after emplace.
  const auto it = std::find_if(records_.rbegin(), records_.rend(),
                               [serial](const auto& r) { return r->serial == serial; });
  if (it != records_.rend()) (*it)->name = name;
}

void flow_core::dump(std::ostream& out) const {
  if (!options_.keep_graph) {
    throw usage_error(
        "weft::flow::dump: the flow keeps no graph; construct it with "
        "weft::flow_options{.keep_graph = true}");
  }
  out << "digraph weft_flow {\n";
  for (const auto& r : records_) {
    out << "  t" << r->serial << " [label=\"";
    if (!r->name.empty()) {
      for (char ch : r->name) {
        if (ch == '"' || ch == '\\') out << '\\';
        out << ch;
      }
    } else if (r->kind != nullptr) {
      out << r->kind;
    } else {
      out << '#' << r->serial;
    }
    out << '"';
    if (r->kind != nullptr) out << ", shape=box, style=dashed";
    out << "];\n";
  }
  for (const auto& r : records_) {
    for (const record::edge& e : r->in) {
      out << "  t" << e.from << " -> t" << r->serial << " [label=\"";
      if (e.object == nullptr) {
        out << "after";
      } else {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%p", e.object);
        out << buf << ' ' << mode_name(e.mode);
      }
      out << "\"];\n";
    }
  }
  out << "}\n";
}

}  // namespace detail

// ---------------------------------------------------------------------------
// flow, flow_task, after

flow::flow(pool& p, flow_options options)
    : core_(std::make_unique<detail::flow_core>(p, options)) {}

flow::~flow() {
  if (!core_) return;
  try {
    core_->drain();
  } catch (...) {
    // Only allocation can fail on the way (a reduction's combine task);
    // the tasks are waited for all the same.
    detail::scheduler::report_error(core_->owner(), std::current_exception());
    core_->drain_without_reductions();
  }
  core_->report_left_errors();
}

detail::flow_core& flow::core() const {
  if (!core_) {
    throw usage_error("weft::flow: the flow was moved from; use the flow it was moved to");
  }
  return *core_;
}

void flow::wait() { core().wait(); }

bool flow::cancel() noexcept { return core_ != nullptr && core_->cancel(); }

void flow::dump(std::ostream& out) const { core().dump(out); }

flow_task flow_task::name(std::string_view name) const {
  if (node_ == nullptr) {
    throw usage_error("weft::flow_task: the handle is empty; use the task flow::emplace returned");
  }
  node_->owner->set_name(node_, generation_, name);
  return *this;
}

after_access after(const flow_task& t) {
  if (t.node_ == nullptr) {
    throw usage_error("weft::after: the flow_task is empty; use the task flow::emplace returned");
  }
  after_access a;
  a.desc.is_after = true;
  a.desc.after_node = t.node_;
  a.desc.after_generation = t.generation_;
  return a;
}

}  // namespace weft
