// Starting a graph's runs (pool::run, run_n, run_until): a run state for
// each, the turn of the run in flight and the queue behind it, and
// cancelling. What a run does once launched is in src/graph/run.cpp.
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "internal.hpp"
#include "weft/detail/scheduler.hpp"
#include "weft/graph.hpp"

namespace weft::detail {

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

void graph_core::launch(run_state* s, bool guarded) noexcept {
  if (prepare_run(s)) {
    launch_prepared(*s->owner, guarded);
  } else {
    finish_run();  // nothing to run: it is over already
  }
}

void graph_core::abandon_enqueue() noexcept {
  std::lock_guard lock{queue_mutex_};
  // acq_rel: as in release_turn(). Back to zero: nobody waits for a turn
  // this enqueue would have taken, and the next start() takes it itself.
  if (runs_.fetch_sub(1, std::memory_order_acq_rel) == 1) turn_free_ = false;
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

}  // namespace weft::detail
