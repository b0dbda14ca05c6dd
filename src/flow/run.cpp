// weft::flow's running tasks: a task's execution (its body, commute
// locks, the release of its successors) and the node's return to the
// producer. execute(), run_body() and release_successors() run per task:
// keep them in one translation unit.
#include <array>
#include <cstdint>
#include <exception>
#include <mutex>

#include "internal.hpp"
#include "weft/detail/context.hpp"
#include "weft/detail/trace.hpp"
#include "weft/flow.hpp"

namespace weft::detail {

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
// Running

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
  {
    std::lock_guard lock{error_mutex_};
    if (!error_) error_ = std::move(e);
  }
  // Release pairs with observe()'s acquire load: whoever sees the bit finds
  // an error stored. stopping() reads it relaxed (a stop only has to be
  // seen eventually).
  status_.fetch_or(failed_bit, std::memory_order_release);
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

}  // namespace weft::detail
