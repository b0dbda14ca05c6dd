// Running a graph: a run's sources queued, the execution of its tasks
// (step(), release_successors(), semaphores, a subflow's end) and the run's
// end. These call each other per task: keep them in one translation unit.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "internal.hpp"
#include "weft/detail/scheduler.hpp"
#include "weft/detail/trace.hpp"
#include "weft/graph.hpp"

namespace weft {

namespace detail {

thread_local std::vector<std::uint32_t> chosen_branches;  // detail/graph_node.hpp

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

}  // namespace detail

// semaphore: a task's acquire and release, on the path of its execution

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
