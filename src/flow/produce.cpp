// weft::flow's producer side: node allocation, the unfinished count, and
// dependency inference (each access's predecessors, reductions, futures,
// after() edges) up to the task's release; on a sequential pool, the
// task's place in the program-order queue instead.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>

#include "internal.hpp"
#include "weft/detail/backoff.hpp"
#include "weft/detail/latch.hpp"
#include "weft/flow.hpp"

namespace weft::detail {

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

}  // namespace weft::detail
