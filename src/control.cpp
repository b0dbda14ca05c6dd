// Pool control (docs/control.md): pause, resume and purge; priorities; the
// per-worker mailboxes of spawn_on; bounded submission with its overflow
// policies (weft::job, the handle an overflow callable gets, is in
// src/job.cpp). The plain path of find_work() never comes here: it looks at
// the attention word once (detail/core/attention.hpp) and goes on when it is
// zero.
#include <algorithm>
#include <array>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/search.hpp"
#include "weft/detail/worker_start.hpp"
#include "weft/pool.hpp"

namespace weft {

namespace detail {

std::exception_ptr cancelled_error() noexcept {
  try {
    return std::make_exception_ptr(
        job_cancelled("weft: the job was dropped before it started (pool::purge(), or an "
                      "overflow callable let its weft::job go); none of it ran"));
  } catch (...) {
    return std::current_exception();  // std::bad_alloc
  }
}

}  // namespace detail

// ---------------------------------------------------------------------------
// Where jobs go

pool::destination pool::mailbox_of(std::size_t worker) const {
  if (worker < size()) return {destination::mailbox, worker};
  if (sequential()) {
    throw usage_error("weft::pool::spawn_on/submit_on: pool '" + name_ +
                      "' is sequential (threads = 0) and has no workers to choose from; use "
                      "spawn/submit");
  }
  throw usage_error("weft::pool::spawn_on/submit_on: worker " + std::to_string(worker) +
                    " does not exist; pool '" + name_ + "' has workers 0 to " +
                    std::to_string(size() - 1) + " (pool::size())");
}

void pool::push_special(detail::job* j, destination d) {
  if (sequential()) {
    push(j);  // one queue, in submission order (docs/control.md)
    return;
  }
  detail::injector& q = d.kind == destination::mailbox ? attention_.mailbox(d.worker)
                        : d.kind == destination::high  ? attention_.high()
                                                       : attention_.low();
  attention_.push(q, j);
  if (d.kind == destination::mailbox) {
    // Only one worker may take it: new_work() would wake any sleeper (or
    // nobody, while another worker searches).
    sleep_.wake_sleepers();
    // seq_cst: a Dekker pair with shrink()'s store of size_ and its look at
    // the leavers' mailboxes after it (seq_cst loads): either it finds our
    // job, or we see that the worker has left (or is leaving) and move the
    // job where any worker takes it.
    if (d.worker >= roster_.size(std::memory_order_seq_cst)) rescue_mail(d.worker);
  } else {
    sleep_.new_work();
  }
}

detail::job* pool::hold_if_paused(detail::job* j, detail::injector& q) noexcept {
  if (j == nullptr || !attention_.paused()) return j;
  detail::fault::at_hold();
  // A priority queue's or mailbox's job is counted again, as push_special()
  // counts it (the plain queues are not counted).
  const bool special = &q != &queues_.shared_queue();
  // Read while we own j: once it is back in q, a purge may take and free it.
  const std::uint32_t flags = j->taken_flags();
  if (!attention_.put_back(q, j, special)) return j;  // no memory: it runs after all
  // A purge() that looked at q before the put-back would leave j queued on
  // a paused pool, its waiters blocked until resume(). purge_seen() is the
  // other half of purge()'s begin_purge() (detail/core/attention.hpp): if
  // the purge came first, the time read here shows it, and j is taken out
  // again and dropped here, unless the purge took it (remove() decides
  // under q's lock). A job made after that purge began is not dropped.
  const std::uint32_t purge = attention_.purge_seen();
  if (detail::attention::made_before_a_purge(flags, purge) && q.remove(j)) {
    if (special) attention_.forget_one();
    posting::cancel_job(j);
    hand_over_drops();
  }
  // The rest of a batch taken with j went to the worker's own deque.
  // Here rather than in find_normal(): a call there cost fib's join rows
  // 5-7% (code layout of the worker loop).
  if (detail::worker* self = detail::tls.self; purge != 0 && self != nullptr && on_own_worker()) {
    drop_missed_by_purge(*self, purge);
  }
  return nullptr;
}

void pool::hand_over_drops() noexcept {
  // A worker defers the finish of a job it ran, cancel paths included,
  // until it runs out of work; this one may be searching already, or about
  // to sleep, so it hands the counts over now for wait() to see.
  detail::worker* self = detail::tls.self;
  if (self != nullptr && on_own_worker()) counting::flush(*this, *self);
}

void pool::drop_missed_by_purge(detail::worker& w, std::uint32_t purge) noexcept {
  if (w.deque.empty() && w.deque.private_size() == 0) return;
  std::vector<detail::job*> kept;
  try {
    // Enough for every job popped below: only the owner pushes.
    kept.reserve(w.deque.size() + w.deque.private_size());
  } catch (...) {
    return;  // no memory: they stay queued until resume(), as before
  }
  // Newest first; a purge may steal some of them meanwhile.
  bool dropped = false;
  while (detail::job* j = w.deque.pop()) {
    if (detail::attention::made_before_a_purge(j->taken_flags(), purge)) {
      posting::cancel_job(j);
      dropped = true;
    } else {
      kept.push_back(j);  // within the reserved capacity: does not throw
    }
  }
  if (dropped) hand_over_drops();
  if (kept.empty()) return;
  std::reverse(kept.begin(), kept.end());  // oldest first, as they were
  try {
    // The ring held them a moment ago, so it does not grow.
    w.deque.push_many(kept.data(), kept.size());
  } catch (...) {
    for (detail::job* j : kept) execute(j);  // no memory to queue them
    return;
  }
  sleep_.new_work();
}

detail::job* pool::find_special(detail::worker* self) {
  // A worker that resize() takes away stops looking at its loop's top level
  // (idle() then returns), never inside one of its jobs' waits (depth > 0):
  // the job it runs finishes first.
  if (self != nullptr && detail::tls.depth == 0 && leaving(*self)) return nullptr;
  // While paused nothing starts.
  if (attention_.paused()) return nullptr;
  if (self != nullptr) {
    detail::injector& mine = attention_.mailbox(self->index);
    if (detail::job* j = hold_if_paused(attention_.take(mine), mine)) {
      detail::worker::bump(self->counts.jobs);
      return j;
    }
  }
  // The order among the three priorities: high, normal, low; but every 8th
  // pick normal comes first, and every 64th low, so that a steady stream of
  // higher jobs delays the lower ones without starving them.
  static thread_local std::uint32_t outsider_picks = 0;
  const std::uint32_t pick = self != nullptr ? ++self->picks : ++outsider_picks;
  auto special = [&](detail::injector& q) -> detail::job* {
    detail::job* j = hold_if_paused(attention_.take(q), q);
    if (j != nullptr && self != nullptr) detail::worker::bump(self->counts.jobs);
    return j;
  };
  enum source : std::uint8_t { high, normal, low };
  static constexpr source usual[] = {high, normal, low};
  static constexpr source normal_first[] = {normal, high, low};
  static constexpr source low_first[] = {low, normal, high};
  const source* order = pick % 64 == 0 ? low_first : pick % 8 == 0 ? normal_first : usual;
  for (int k = 0; k < 3; ++k) {
    detail::job* j = order[k] == normal
                         ? find_normal(self)
                         : special(order[k] == high ? attention_.high() : attention_.low());
    if (j != nullptr) return j;
  }
  return nullptr;
}

pool::search::outlook pool::search::outlook_for(const pool& p, const detail::worker& w,
                                                bool priorities, std::memory_order order) noexcept {
  if (p.leaving(w, order)) return outlook::leave;
  if (p.attention_.paused(order)) return outlook::paused;
  // The queues' seq_cst loads: the other half of their producers' pairs
  // (docs/sleep.md); mailboxes and priority queues are injectors too.
  if (p.attention_.mail_waiting(w.index)) return outlook::special_job;
  if (priorities && p.attention_.priority_jobs_waiting()) return outlook::special_job;
  return outlook::none;
}

bool pool::search::work_for(const pool& p, const detail::worker& w) noexcept {
  // seq_cst: after sleep_controller::prepare(), a Dekker pair with resume()
  // (attention::resume()'s seq_cst RMW, then wake_all()'s load of the state)
  // and with shrink() (roster::shrink_to()'s store of the target, then
  // wake_sleepers()' load).
  const outlook o = outlook_for(p, w, true, std::memory_order_seq_cst);
  if (o != outlook::none) return o != outlook::paused;
  return !p.all_queues_empty();
}

bool pool::search::mail_for(const void* ctx) noexcept {
  const auto* c = static_cast<const mail_check*>(ctx);
  // Relaxed: under the sleep lock, which the producer took after its push
  // and its raise of the attention word; resume() and shrink() take it too, after
  // their stores (wake_all(), wake_sleepers()).
  const outlook o = outlook_for(*c->owner, *c->worker, false, std::memory_order_relaxed);
  return o == outlook::leave || o == outlook::special_job;
}

bool pool::search::special_worth_a_look(const pool& p, const detail::worker& w,
                                        bool full) noexcept {
  // Relaxed: the search loop polls; the last look before sleeping is
  // work_for().
  const outlook o = outlook_for(p, w, true, std::memory_order_relaxed);
  if (o != outlook::none) return o != outlook::paused;
  return full ? !p.all_queues_empty() : !p.outside_queues_empty();
}

// ---------------------------------------------------------------------------
// Pause, resume, purge

void pool::pause() {
  if (sequential()) {
    throw usage_error("weft::pool::pause: pool '" + name_ +
                      "' is sequential (threads = 0): its jobs run only inside waits, which a "
                      "pause would make hang; do not wait instead");
  }
  attention_.pause();
}

void pool::resume() { attention_.resume(sleep_); }

bool pool::paused() const noexcept { return attention_.paused(); }

std::size_t pool::callables_in(detail::job* j) noexcept {
  if ((j->taken_flags() & detail::job_flags::batch) == 0) return 1;
  static_assert(detail::fits_inline<detail::batch_span>);
  const detail::batch_span& span =
      *detail::callable_of<detail::batch_span>(static_cast<detail::heap_job*>(j));
  return span.hi - span.lo;
}

std::size_t pool::purge() {
  std::size_t dropped = 0;
  // A batch of spawn_all running now drops the callables it has not
  // started when it sees the purge's time (weft/batch.hpp).
  attention_.begin_purge();
  if (sequential()) {
    const std::deque<detail::job*> queued = queues_.take_sequential();
    std::deque<detail::job*> kept;
    for (detail::job* j : queued) {
      if ((j->flags & detail::job_flags::cancellable) != 0) {
        dropped += callables_in(j);
        posting::cancel_job(j);
      } else {
        kept.push_back(j);
      }
    }
    queues_.put_back_sequential(kept);
    return dropped;
  }
  // Jobs purge may not drop go back: to their priority queue or mailbox, or
  // else to the injector (any worker may run them, as a thief would have).
  // A front end's job that asks to be kept is the only kind that does.
  std::vector<detail::job*> kept;
  auto sort = [&](detail::job* j, destination home) {
    if ((j->taken_flags() & detail::job_flags::cancellable) != 0) {
      dropped += callables_in(j);
      posting::cancel_job(j);
      return;
    }
    try {
      if (home.kind == destination::any) {
        kept.push_back(j);
      } else {
        push_special(j, home);
      }
    } catch (...) {
      execute(j);  // no memory to keep it queued: it runs here instead
    }
  };
  // Taken whole before any goes back, so that none is looked at twice.
  auto sort_all = [&](detail::injector& q, destination home) {
    std::vector<detail::job*> taken;
    while (detail::job* j = attention_.take(q)) taken.push_back(j);
    for (detail::job* j : taken) sort(j, home);
  };
  for (std::size_t i = 0; i < attention_.mailboxes(); ++i) {
    sort_all(attention_.mailbox(i), {destination::mailbox, i});
  }
  sort_all(attention_.high(), {destination::high});
  sort_all(attention_.low(), {destination::low});
  while (detail::job* j = queues_.shared_queue().pop()) sort(j, {});
  const detail::lane_set& lanes = queues_.lanes();
  for (std::size_t i = 0, n = lanes.size(); i < n; ++i) {
    detail::job* j = nullptr;
    while (lanes[i].queue.take(&j, 1) == 1) sort(j, {});
  }
  for (const auto& w : roster_.all()) {
    // steal() also returns nullptr when it lost a race (to the owner, or
    // to a worker that took a job just as the pool was paused): look again
    // until the deque is empty.
    for (;;) {
      if (detail::job* j = w->deque.steal()) {
        sort(j, {});
      } else if (w->deque.empty()) {
        break;
      }
    }
  }
  requeue(kept.data(), kept.size());
  return dropped;
}

void pool::requeue(detail::job* const* jobs, std::size_t n) noexcept {
  if (n == 0) return;
  try {
    queues_.shared_queue().push_many(jobs, n);
  } catch (...) {
    for (std::size_t i = 0; i < n; ++i) execute(jobs[i]);  // no memory to queue them
    return;
  }
  sleep_.new_work();
}

// ---------------------------------------------------------------------------
// Resizing

void pool::resize(std::size_t n) {
  const std::string call = "weft::pool::resize(" + std::to_string(n) + "): pool '" + name_ + "' ";
  if (sequential()) {
    throw usage_error(call +
                      "is sequential (threads = 0) and has no workers to add or take away; "
                      "make it with threads >= 1 (and max_threads for room to grow)");
  }
  if (in_own_job()) {
    throw usage_error(call +
                      "was called from one of the pool's own jobs, which it might wait for (a "
                      "leaving worker finishes its job first); call it from a thread outside the "
                      "pool");
  }
  if (n == 0) {
    throw usage_error(call +
                      "cannot switch to sequential mode (no workers); keep at least 1 worker");
  }
  if (n > max_size()) {
    throw usage_error(call + "may have at most " + std::to_string(max_size()) +
                      " workers (pool_options::max_threads); make it with a larger "
                      "max_threads to grow it further");
  }
  std::lock_guard lock{roster_.resize_mutex()};
  const std::size_t now = size();
  if (n < now) shrink(now, n);
  if (n <= now) return;
  // Checks the CPUs before any thread starts, as the constructor does.
  detail::worker_start setup{n - now, roster_.cpus(), roster_.on_start(), name_};
  // A thief that misses the new, empty deques sleeps only after
  // work_for(), which scans every slot.
  roster_.grow_to(n);
  try {
    start_workers(now, n, setup.needed() ? &setup : nullptr);
  } catch (...) {
    shrink(n, now);  // those of the new workers that started leave again
    throw;
  }
  roster_.grown_to(n);
}

void pool::shrink(std::size_t from, std::size_t to) noexcept {
  // A busy worker sees it at its next find_work(); the ones asleep are
  // woken below.
  attention_.begin_shrink();
  // The roster's pairs: with work_for() after a worker's
  // sleep_controller::prepare() (either it sees that it leaves, or
  // wake_sleepers() below sees it asleep, and its park() asks mail_for()
  // under the sleep lock, which wake_sleepers() takes after the store), and
  // with push_special() (a spawn_on racing with us).
  roster_.shrink_to(to);
  sleep_.wake_sleepers();
  for (std::size_t i = to; i < from; ++i) {
    std::thread& t = roster_[i].thread;
    if (t.joinable()) t.join();  // not joinable: its start failed (resize())
  }
  roster_.shrunk_to(to);
  attention_.end_shrink();
  // A spawn_on that chose a leaver before we changed the size may have queued
  // its job after the leaver's last look (retire()).
  for (std::size_t i = to; i < from; ++i) rescue_mail(i);
}

void pool::retire(detail::worker& w) noexcept {
  // Only the owner pushes to its deque, and we run no more jobs: pop all.
  // Oldest first to the injector, in batches that fit the reserved scratch.
  std::vector<detail::job*>& batch = w.batch;
  for (;;) {
    batch.clear();
    while (batch.size() < batch.capacity()) {
      detail::job* j = w.deque.pop();
      if (j == nullptr) break;
      batch.push_back(j);
    }
    if (batch.empty()) break;
    std::reverse(batch.begin(), batch.end());
    requeue(batch.data(), batch.size());
  }
  batch.clear();
  rescue_mail(w.index);
  // Whatever we leave, and the wake-up we may have taken from a sleeper
  // that could have used it: a sleeper is woken if nobody searches.
  sleep_.new_work();
  // requeue() runs jobs here when it cannot queue them: their counts too
  // must reach the waiters before this thread ends.
  counting::flush(*this, w);
}

void pool::rescue_mail(std::size_t i) noexcept {
  constexpr std::size_t chunk = 16;
  std::array<detail::job*, chunk> taken{};
  for (;;) {
    std::size_t n = 0;
    while (n < chunk) {
      detail::job* j = attention_.take(attention_.mailbox(i));
      if (j == nullptr) break;
      taken[n++] = j;
    }
    requeue(taken.data(), n);
    if (n < chunk) return;
  }
}

// ---------------------------------------------------------------------------
// Bounded submission

void pool::posting::dispatch_bounded(pool& p, detail::job* j, destination d) {
  if (p.in_own_job()) {
    // A job of ours that had to wait for room could wait for itself.
    push_to(p, j, d);
    return;
  }
  using admission = detail::bound::admission;
  switch (p.bound_.admit(d.kind == destination::mailbox, p.counters_, p.name_)) {
    case admission::slot:
      j->flags |= detail::job_flags::throttled;
      try {
        push_to(p, j, d);
      } catch (...) {
        j->flags &= ~detail::job_flags::throttled;
        p.bound_.release();
        throw;
      }
      return;
    case admission::run_here:
      p.execute(j);
      return;
    case admission::hand_over:
      try {
        p.bound_.hand_over(job{&p, j});
      } catch (...) {
        // The job is the callable's now (dropped, if it still held it):
        // the exception goes where a job's would.
        p.report_error(std::current_exception());
      }
      return;
  }
}

}  // namespace weft
