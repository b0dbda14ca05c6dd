// The worker's loop and everything on its path: where jobs are queued
// (push, push_many), where a worker finds them (its own deque, then the
// lanes, the injector and the other workers' deques), how it runs them, and
// its idle search before it sleeps (docs/sleep.md). A worker's walk goes
// worker_main -> find_work -> find_normal/find_elsewhere -> execute, and
// when nothing is found idle() -> the sleep protocol -> back here.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "search.hpp"
#include "weft/detail/platform.hpp"
#include "weft/detail/worker_start.hpp"
#include "weft/pool.hpp"

namespace weft {

namespace {

using namespace detail::search_tuning;

void name_thread(const std::string& base, std::size_t index) {
  // Linux keeps the name's last 15 characters (platform::name_this_thread).
  detail::platform::name_this_thread(base + "-" + std::to_string(index));
}

std::uint64_t next_random(std::uint64_t& state) noexcept {
  // xorshift64: cheap, and good enough to spread steal attempts.
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

}  // namespace

void pool::push(detail::job* j) {
  if (sequential()) {
    queues_.push_sequential(&j, 1);
    return;
  }
  detail::worker* self = detail::tls.self;
  if (self != nullptr && on_own_worker()) {
    self->deque.push(j);
  } else if (detail::lane* l = my_lane()) {
    l->queue.push(j);
  } else {
    queues_.shared_queue().push(j);
  }
  sleep_.new_work();
}

std::size_t pool::push_many(detail::job* const* jobs, std::size_t n) noexcept {
  if (n == 0) return 0;
  detail::worker* self = detail::tls.self;
  try {
    // Each branch is all or nothing, and publishes the n jobs at once: one
    // store a thief or a sleeping worker can see, and one new_work() below.
    // A worker's own deque first: the graphs' hot path (a sequential pool
    // has no workers, so no thread takes this branch for one).
    if (self != nullptr && on_own_worker()) {
      self->deque.push_many(jobs, n);
    } else if (sequential()) {
      queues_.push_sequential(jobs, n);
      return n;
    } else if (detail::lane* l = my_lane()) {
      l->queue.push_many(jobs, n);
    } else {
      queues_.shared_queue().push_many(jobs, n);
    }
  } catch (...) {
    // Out of memory for a queue to grow (the only way a push fails): none
    // was pushed, and the caller runs them.
    counters_.add_unqueued_runs(n);
    return 0;
  }
  // One wake-up for the batch: a woken worker that finds work left wakes
  // the next sleeper when it stops searching (docs/sleep.md), so a batch
  // wakes only as many workers as it keeps busy.
  sleep_.new_work();
  return n;
}

detail::job* pool::find_normal(detail::worker* self) {
  // A job taken from another thread's queue is looked at again for the
  // pause: taking it synchronised with its push, so a pause() that returned
  // before that push is seen here, and the job waits (find_work()'s first
  // look may have come too early). The own deque needs no second look: its
  // jobs were pushed by this thread, or taken from elsewhere after a look
  // like this one.
  if (self == nullptr) {
    detail::job* j = find_elsewhere(nullptr);
    if (j != nullptr && attention_.wanted()) [[unlikely]] {
      return hold_if_paused(j, queues_.shared_queue());
    }
    return j;
  }
  detail::job* j = take_own(*self);
  if (j == nullptr) {
    // Going to look elsewhere is a good moment to hand our counts to a
    // waiter: a feeder's long jobs each come from elsewhere.
    if (counting::flush_requested(*this)) counting::hand_over_counts(*self);
    j = find_elsewhere(self);
    if (j == nullptr) return nullptr;
    if (attention_.wanted()) [[unlikely]] {
      j = hold_if_paused(j, queues_.shared_queue());
      if (j == nullptr) return nullptr;
    }
  }
  detail::worker::bump(self->counts.jobs);
  return j;
}

detail::job* pool::find_elsewhere(detail::worker* self) {
  if (sequential()) return queues_.pop_sequential();
  if (detail::job* j = search::take_from_lanes(*this, self)) return j;
  detail::injector& injector = queues_.shared_queue();
  if (!injector.empty()) {
    if (self == nullptr) return injector.pop();
    self->batch.clear();
    detail::job* j = injector.pop(&self->batch, injector_batch);
    search::keep_batch(*this, *self, false);
    if (j != nullptr) return j;
  }
  return search::steal_from_workers(*this, self);
}

void pool::search::keep_batch(pool& p, detail::worker& self, bool far_behind) {
  if (self.batch.empty()) return;
  // The deque is empty here (a batch is only taken after the owner's pop
  // found nothing, and only the owner pushes) and a batch is smaller than
  // its smallest capacity, so these pushes never grow it: nothing here can
  // fail, and no job taken can be lost to an allocation failure.
  // Newest first, so the owner pops the oldest first.
  if (far_behind) {
    // The workers are what holds the producer up: publish the batch with
    // one store, and fetch its jobs, each last written by the producer's
    // core, all at once rather than one miss per job as each runs.
    for (detail::job* j : self.batch) __builtin_prefetch(j, 1);
    std::reverse(self.batch.begin(), self.batch.end());
    self.deque.push_many(self.batch.data(), self.batch.size());
  } else {
    // A store per job. Publishing at once made the workers drain a lane
    // whose producer keeps pace with them, and then wait at it, reading the
    // lines it writes, which slowed every push: 1,000,000 spawns one by one
    // fell into a mode of 2-3x their time (docs/deque.md, "What landed").
    for (auto it = self.batch.rbegin(); it != self.batch.rend(); ++it) self.deque.push(*it);
  }
  p.sleep_.new_work();
}

detail::job* pool::search::take_from_lanes(pool& p, detail::worker* self) {
  const detail::lane_set& lanes = p.queues_.lanes();
  const std::size_t n = lanes.size();
  if (n == 0) return nullptr;
  std::array<detail::job*, largest_lane_batch> taken;  // take() writes what it returns
  const std::size_t start = self != nullptr ? next_random(self->rng) % n : 0;
  for (std::size_t k = 0; k < n; ++k) {
    detail::lane& l = lanes[(start + k) % n];
    if (l.queue.empty()) continue;
    // A hint, read once: the take reads the same lines. A lane far behind
    // its producer gives twice the batch per take (half the takes and
    // new_work() calls per job).
    const std::int64_t waiting = self != nullptr ? l.queue.waiting() : 0;
    std::size_t max = 1;
    if (self != nullptr) max = waiting >= 2 * lane_backlog ? largest_lane_batch : lane_batch;
    const std::size_t got = l.queue.take(taken.data(), max);
    if (got == 0) continue;
    if (self != nullptr && got > 1) {
      self->batch.assign(taken.begin() + 1, taken.begin() + static_cast<std::ptrdiff_t>(got));
      // A full batch that leaves many more waiting: the producer is far
      // ahead of the workers.
      const auto left = waiting - static_cast<std::int64_t>(got);
      keep_batch(p, *self, got >= lane_batch && left >= lane_backlog);
    }
    return taken[0];
  }
  return nullptr;
}

detail::job* pool::search::steal_from_workers(pool& p, detail::worker* self) {
  // Relaxed: a deque missed by a stale count is seen by the look before
  // sleeping (work_for(), which scans every slot).
  const std::size_t n = p.roster_.active();
  static thread_local std::uint64_t outsider_rng = 0x2545F4914F6CDD1DULL;
  const std::size_t start = next_random(self != nullptr ? self->rng : outsider_rng) % n;
  for (std::size_t k = 0; k < n; ++k) {
    detail::worker& victim = p.roster_[(start + k) % n];
    if (&victim == self) continue;
    if (self != nullptr) detail::worker::bump(self->counts.steal_attempts);
    if (detail::job* j = victim.deque.steal()) {
      if (self != nullptr) detail::worker::bump(self->counts.steals);
      if (p.tracer_ != nullptr && self != nullptr) [[unlikely]] {
        p.tracer_->ring(self->index)
            .instant(detail::trace_kind::steal, p.tracer_->now(), victim.index);
      }
      return j;
    }
  }
  return nullptr;
}

bool pool::search::lanes_filling(const pool& p, std::int64_t& last_pushed) noexcept {
  // Only lanes hold work, they hold less than a batch, and their threads
  // pushed since the last look.
  if (!p.queues_.shared_queue().empty()) return false;
  for (const auto& w : p.roster_.all()) {
    if (!w->deque.empty()) return false;
  }
  const detail::lane_set& lanes = p.queues_.lanes();
  std::int64_t pushed = 0;
  std::int64_t waiting = 0;
  for (std::size_t i = 0, n = lanes.size(); i < n; ++i) {
    pushed += lanes[i].queue.pushed();
    waiting += lanes[i].queue.waiting();
  }
  const bool growing = pushed != last_pushed;
  last_pushed = pushed;
  return growing && waiting < static_cast<std::int64_t>(lane_batch);
}

bool pool::outside_queues_empty() const noexcept { return queues_.outside_empty(); }

bool pool::all_queues_empty() const noexcept {
  if (!outside_queues_empty()) return false;
  const detail::roster::slot_list& slots = roster_.all();
  return std::all_of(slots.begin(), slots.end(), [](const auto& w) { return w->deque.empty(); });
}

void pool::execute(detail::job* j) noexcept {
  if (tracer_ != nullptr) [[unlikely]] {
    traced_execute(j);
    return;
  }
  if (!sequential()) {
    j->run(j);
    return;
  }
  run_sequential(j);
}

void pool::run_sequential(detail::job* j) noexcept {
  // A sequential pool's job runs on the waiting thread, which acts as the
  // pool's only worker meanwhile (this_worker::index() is 0, join uses it).
  detail::context& ctx = detail::tls;
  const detail::context saved = ctx;
  ctx.owner = this;
  ctx.self = nullptr;
  ctx.helper_index = detail::no_helper_index;
  j->run(j);
  ctx.owner = saved.owner;
  ctx.self = saved.self;
  ctx.helper_index = saved.helper_index;
}

void pool::traced_execute(detail::job* j) noexcept {
  const detail::context& ctx = detail::tls;
  const bool own_worker = ctx.owner == this && ctx.self != nullptr;
  detail::trace_ring* ring = nullptr;
  try {
    ring = &tracer_->ring(own_worker ? ctx.self->index : detail::tracer::npos);
  } catch (...) {
    // No memory for this thread's ring: the job runs untraced.
  }
  detail::trace_ring* const outer_ring = std::exchange(detail::current_trace, ring);
  detail::trace_record_words r = tracer_->job_record();
  r.start = detail::tracer::now();
  if (sequential()) {
    run_sequential(j);
  } else {
    j->run(j);
  }
  r.end = detail::tracer::now();
  if (ring != nullptr) ring->put(r);
  detail::current_trace = outer_ring;
}

// A part's function, defined here rather than beside its part
// (detail/core/idle_waiters.hpp): the worker's loop below calls it whenever
// it runs out of work (flush()), and inlines it from this file, as it did
// before the part existed.
void detail::idle_waiters::notify() {
  {
    // Taking the lock orders this notification against a blocked waiter
    // between its check of the counts and its wait. A napper leaves the
    // list under it too, so its parker (its worker's, alive while it waits
    // here) is unparked only while it is still in the list.
    std::lock_guard lock{mutex_};
    for (napper* n = nappers_; n != nullptr; n = n->next) n->to_unpark->unpark();
  }
  cv_.notify_all();
}

void pool::worker_main(detail::worker& w, detail::worker_start* start) {
  name_thread(name_, w.index);
  // Pinning and the start hook; on failure the constructor throws.
  if (start != nullptr && !start->run(w.index)) return;
  detail::tls = detail::context{this, &w, 0};
  for (;;) {
    detail::job* j = find_work(&w);
    if (j == nullptr) {
      counting::flush(*this, w);
      const std::uint64_t idle_from = detail::counters::now_ns();
      // Relaxed: a counter (stats()).
      w.counts.idle_since.store(idle_from + 1, std::memory_order_relaxed);
      j = idle(w);
      detail::worker::bump(w.counts.idle_ns, detail::counters::now_ns() - idle_from);
      w.counts.idle_since.store(0, std::memory_order_relaxed);
    }
    if (j == nullptr) break;  // the pool is stopping, or we are leaving it
    execute(j);
    counting::flush_now_and_then(*this, w);
  }
  if (leaving(w)) retire(w);
  if (!roster_.on_stop()) return;
  detail::tls = detail::context{};
  try {
    detail::call_worker_hook(roster_.on_stop(), w.index);
  } catch (...) {
    report_error(std::current_exception());
  }
}

detail::job* pool::idle(detail::worker& w) {
  // At most half the workers (at least one) spin at a time, or all of them
  // after a fork-join; see detail::search_limit().
  const bool forked = std::exchange(w.forked_with_others, false);
  bool searching = sleep_.try_start_searching(detail::search_limit(size(), forked));
  sleep_.notify_listeners();
  for (;;) {
    if (leaving(w)) {
      // resize() takes us away: retire() wakes a worker for what we leave.
      if (searching) sleep_.stop_searching();
      return nullptr;
    }
    if (searching) {
      // Search: the next job often arrives within microseconds (a submit/get
      // ping-pong, the next round of a parallel loop).
      // The queues that threads outside the pool push to are looked at
      // after every pause: a job handed over from outside (a submit/get
      // round trip) is then found within a few tens of nanoseconds. The
      // workers' deques only every relax_per_poll pauses, as before:
      // reading a busy worker's deque this often would make each of its
      // pushes and pops miss the cache.
      const auto until = std::chrono::steady_clock::now() + detail::idle_spin_time;
      int pauses = 1;
      unsigned polls = 0;
      std::int64_t last_pushed = -1;
      for (;;) {
        for (int i = 0; i < pauses; ++i) detail::cpu_relax();
        const bool full = ++polls % detail::relax_per_poll == 0 || pauses > 1;
        if (full && std::chrono::steady_clock::now() >= until) break;
        // About every microsecond, let another thread that shares our
        // CPU run: a thread waiting for a job we are about to find (or just
        // ran) may sit on this very CPU, and Linux does not always move one
        // of two busy threads to the other, idle CPU. Without this, a
        // submit/get round trip fell into a mode of 30-230 us, now and
        // then for a whole run (docs/sleep.md).
        if (polls % yield_every_polls == 0) std::this_thread::yield();
        if (search::worth_a_look(*this, w, full)) {
          if (leaving(w)) break;
          // A lane whose thread is still pushing: let a batch build up
          // instead of taking its jobs one by one, which costs the producer
          // a cache miss per job, and look less often meanwhile. A lane that
          // stopped growing (a submit/get ping-pong) is taken at once.
          if (search::lanes_filling(*this, last_pushed)) {
            pauses = std::min(pauses * 2, max_pauses_while_filling);
            continue;
          }
          if (detail::job* j = find_work(&w)) {
            // Producers that saw us searching woke nobody; if we were the
            // last searcher and work is left, wake a sleeper for it.
            if (sleep_.stop_searching() && search::work_for(*this, w)) sleep_.new_work();
            return j;
          }
        }
      }
    }
    // Announce, look once more, then park (docs/sleep.md).
    sleep_.prepare(searching);
    if (search::work_for(*this, w)) {
      sleep_.cancel();  // sleeping -> searching
      searching = true;
      continue;
    }
    const std::uint64_t parked_at = tracer_ != nullptr ? tracer_->now() : 0;
    detail::worker::bump(w.counts.parks);
    const search::mail_check mail{this, &w};
    const bool woken = sleep_.park(&search::mail_for, &mail);
    if (woken) detail::worker::bump(w.counts.wakeups);
    if (tracer_ != nullptr) [[unlikely]] {
      tracer_->ring(w.index).span(detail::trace_kind::parked, "parked", parked_at, tracer_->now());
    }
    if (!woken) return nullptr;  // stopping; else woken: searching
    searching = true;
  }
}
}  // namespace weft
