#include "weft/pool.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <system_error>

#include "weft/detail/platform.hpp"
#include "weft/detail/visit.hpp"
#include "weft/detail/worker_start.hpp"

namespace weft {

namespace {

// Jobs a worker moves from the injector to its own deque per lock taken.
constexpr std::size_t injector_batch = 127;
// Jobs a worker takes from a lane per CAS (at most half the lane), and twice
// as many from a lane that holds more than twice lane_backlog.
constexpr std::size_t lane_batch = 32;
constexpr std::size_t largest_lane_batch = 2 * lane_batch;
// Jobs left in a lane after a worker took a full batch from it beyond which
// the worker takes the fast way to keep its batch (pool::keep_batch()).
constexpr std::int64_t lane_backlog = 32 * static_cast<std::int64_t>(lane_batch);
// The longest pause between two looks of an idle worker at a lane that is
// still filling up (about 5 us at 20 ns a pause).
constexpr int max_pauses_while_filling = 256;
// An idle worker's search yields its CPU every this many looks (about 1 us).
constexpr unsigned yield_every_polls = 16;

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

namespace detail {

void report_unretrieved(const std::exception_ptr& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft: a future was destroyed without get() and its job threw: %s\n",
                 e.what());
  } catch (...) {
    std::fprintf(stderr,
                 "weft: a future was destroyed without get() and its job threw a non-standard "
                 "exception\n");
  }
}

}  // namespace detail

namespace {

std::uint64_t next_pool_id() noexcept {
  static std::atomic<std::uint64_t> last{0};
  // Relaxed: only uniqueness matters.
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace

pool::pool(pool_options options)
    : id_(next_pool_id()),
      name_(std::move(options.name)),
      waiters_help_(options.waiters_help),
      on_worker_stop_(std::move(options.on_worker_stop)),
      cpus_(options.cpus),
      on_worker_start_(options.on_worker_start),
      bound_(options.capacity, std::move(options.on_full)),
      errors_(std::move(options.on_error)) {
  // Checks cpus before any thread starts (src/worker_start.cpp).
  detail::worker_start start{options.threads, cpus_, on_worker_start_, name_};
  const std::size_t threads = start.workers();
  const std::size_t slots = options.max_threads != 0 ? options.max_threads : threads;
  if (options.max_threads != 0 && threads == 0) {
    throw usage_error("weft::pool '" + name_ +
                      "': pool_options::max_threads is set for a sequential pool (threads = 0), "
                      "which cannot be resized; leave it 0, or ask for threads");
  }
  if (options.max_threads != 0 && options.max_threads < threads) {
    throw usage_error("weft::pool '" + name_ +
                      "': pool_options::max_threads = " + std::to_string(options.max_threads) +
                      " is less than the " + std::to_string(threads) +
                      " workers it starts with; set it to at least threads, or leave it 0");
  }
  constexpr std::size_t most_workers = std::size_t{1} << 16;
  if (slots > most_workers) {
    throw usage_error("weft::pool '" + name_ + "': " + std::to_string(slots) +
                      " workers (pool_options::threads or max_threads) is more than weft "
                      "supports (" +
                      std::to_string(most_workers) + ")");
  }
  if (std::string path = detail::trace_path(options.trace); !path.empty()) {
    if (options.trace_records == 0 || options.trace_records > (std::size_t{1} << 32)) {
      throw usage_error(
          "weft::pool: pool_options::trace_records must be between 1 and 2^32 (records of 64 "
          "bytes per thread); a traced pool needs room for at least one");
    }
    tracer_ = std::make_unique<detail::tracer>(slots, options.trace_records, std::move(path));
  }
  if (bound_.limited() && threads == 0) {
    throw usage_error(
        "weft::pool: pool_options::capacity needs worker threads; a sequential pool "
        "(threads = 0) starts no job before a wait, so a full one could never make room");
  }
  workers_.reserve(slots);
  mailboxes_.reserve(slots);
  for (std::size_t i = 0; i < slots; ++i) {
    constexpr std::size_t mailbox_capacity = 16;
    mailboxes_.push_back(std::make_unique<detail::injector>(mailbox_capacity));
    workers_.push_back(std::make_unique<detail::worker>(i));
    // Taking jobs in batches must not allocate (keep_batch()).
    constexpr std::size_t largest_batch = std::max(injector_batch + 1, largest_lane_batch);
    workers_.back()->batch.reserve(largest_batch);
  }
  // Relaxed: the threads start after these stores.
  size_.store(threads, std::memory_order_relaxed);
  target_.store(threads, std::memory_order_relaxed);
  active_.store(threads, std::memory_order_relaxed);
  // Every worker slot exists before any thread starts, so thieves can scan
  // workers_ without synchronisation. With pinning or a start hook, every
  // worker runs them and reports before the constructor returns
  // (docs/control.md). Registered first, before any job can exist: a
  // future of ours knows us by this entry once its job has finished
  // (detail/visit.hpp).
  detail::register_pool(this, life());
  try {
    start_workers(0, threads, start.needed() ? &start : nullptr);
  } catch (...) {
    detail::unregister_pool(this);
    // Stop hooks that submit to us are refused (pool_closed), as in the
    // destructor.
    closing_.store(true, std::memory_order_seq_cst);
    sleep_.stop();
    for (auto& w : workers_) {
      if (w->thread.joinable()) w->thread.join();
    }
    errors_.print_unrethrown(name_);  // what stop hooks threw
    throw;
  }
}

void pool::start_workers(std::size_t from, std::size_t to, detail::worker_start* setup) {
  std::size_t started = from;
  try {
    for (; started < to; ++started) {
      detail::worker& w = *workers_[started];
      w.thread = std::thread([this, &w, setup] { worker_main(w, setup); });
    }
  } catch (...) {
    // No thread for the rest: the ones that started report all the same.
    if (setup != nullptr) setup->wait(started - from);
    throw;
  }
  if (setup != nullptr) setup->wait(to - from);
}

pool::~pool() {
  if (on_own_worker()) {
    std::fputs(
        "weft: a pool was destroyed by one of its own jobs, which can never finish; "
        "destroy it from outside the pool\n",
        stderr);
    std::abort();
  }
  // From here on a future of ours whose job has finished takes us for gone
  // (then() runs its continuation itself); one that holds the registry
  // counts its job first, and we drain it below (docs/continuations.md).
  detail::unregister_pool(this);
  // A paused pool finishes its work too (docs/control.md).
  if (paused()) resume();
  // seq_cst pairs with the seq_cst load in check_open(): a submitter either
  // sees the pool closing, or its job is seen by quiescent() below.
  closing_.store(true, std::memory_order_seq_cst);
  // Timers that have not fired never will (docs/control.md, "Timers"): stop
  // the timer thread before the drain. Acquire pairs with the release CAS
  // that published the service (src/timer.cpp).
  detail::stop_timers(timers_.load(std::memory_order_acquire), false);
  auto drained = [this] { return quiescent(); };
  auto nap = [&](std::chrono::microseconds d) { nap_until_idle(drained, d, std::nullopt); };
  wait_on(
      drained, [&] { block_until(drained); }, nap);
  // Every job has finished. Submitters that are not workers may still be
  // between their count and their last touch of the pool (waking a worker,
  // or leaving after a refusal), and threads that ran jobs outside the pool
  // may still be leaving help_until(): wait for both, briefly.
  while (!submissions_ended() || visitors_.load(std::memory_order_acquire) != 0) {
    // Acquire (above) pairs with the release decrement in help_until().
    std::this_thread::yield();
  }
  // And threads that waited on our jobs' futures may still be leaving the
  // wait (visit_scope).
  detail::wait_for_visits(this);
  // Nobody can make a timer any more: a service made during the drain (by
  // one of our jobs, or a submitter that got in just before closing_) is
  // stopped too, and the pool lets go of it. Acquire: as above.
  detail::stop_timers(timers_.load(std::memory_order_acquire), true);
  sleep_.stop();
  {
    std::lock_guard lock{resize_mutex_};
    for (auto& w : workers_) {
      if (w->thread.joinable()) w->thread.join();
    }
  }
  if (tracer_ != nullptr) {
    try {
      tracer_->write_file(tracer_->path(), name_);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "weft: pool '%s': %s\n", name_.c_str(), e.what());
    }
  }

  errors_.print_unrethrown(name_);
}

pool::ticket pool::count_outside_spawn(std::uint32_t n) {
  if (!sequential()) {
    if (detail::lane* l = my_lane()) return count_against(l->cache, n);
  }
  return count_shared(n);
}

pool::ticket pool::count_shared(std::uint32_t n) { return count_against(external_cache_, n); }

void pool::add_spawned(detail::job_cache& c, unsigned epoch, std::uint32_t n) {
  std::atomic<std::uint64_t>& spawned = c.spawned[epoch];
  // seq_cst: see check_open() and count_against().
  if (&c == &external_cache_) {
    spawned.fetch_add(n, std::memory_order_seq_cst);
  } else {
    // A lane's thread is its only writer.
    spawned.store(spawned.load(std::memory_order_relaxed) + n, std::memory_order_seq_cst);
  }
}

pool::ticket pool::count_against(detail::job_cache& c, std::uint32_t n) {
  unsigned inherited = 0;
  if (detail::running_scope::find(this, inherited)) {
    // A job of ours, run by a thread that is not our worker (a helping
    // waiter, a wait_until caller): its spawns belong to its epoch, which
    // cannot drain before it finishes. Like a worker's job, it may spawn
    // while the pool closes: it is counted and unfinished, so the
    // destructor's drain waits for it, and sees this count (seq_cst) before
    // its finish. Refusing here made pool_closed escape from a job that a
    // waiter ran during the destruction.
    ticket t{&c, inherited, n};
    add_spawned(c, t.epoch, n);
    return t;
  }
  // seq_cst, as the re-reads below: ordered with the flip in drain_epochs().
  std::uint64_t seen = epoch_.load(std::memory_order_seq_cst);
  ticket t{&c, static_cast<unsigned>(seen & 1), n};
  add_spawned(c, t.epoch, n);
  check_open(t);
  // A wait() may have flipped the epoch between our read and our count, and
  // seen that parity drained without us: then a later wait() would not
  // wait for this job although it was submitted before that wait began.
  // So read the epoch again: while it moves, move the job to the current
  // parity (counts only grow: count it there, and count it finished in the
  // old one). Once a re-read finds it where it was, any later flip comes
  // after our count in the seq_cst order, and the flipping waiter's collect
  // sees it (verify/idle.pml, docs/waiting.md).
  for (;;) {
    const std::uint64_t now = epoch_.load(std::memory_order_seq_cst);
    if (now == seen) break;
    const auto parity = static_cast<unsigned>(now & 1);
    if (parity != t.epoch) {
      add_spawned(c, parity, n);
      // The counts left behind are submissions of their own that end here:
      // finished for pool.wait(), and left for the destructor, which waits
      // until every cache's left count matches its spawned counts.
      count_finished(c, t.epoch, n);
      end_submission(t);
      t.epoch = parity;
    }
    seen = now;
  }
  return t;
}

void pool::check_open(const ticket& t) {
  // seq_cst: the caller's seq_cst increment of a spawned count and this load
  // pair with the destructor's seq_cst store of closing_ and its seq_cst
  // loads in quiescent(): a submitter either sees the pool closing, or the
  // destructor sees its job and waits for it.
  if (!closing_.load(std::memory_order_seq_cst) || on_own_worker()) return;
  // The message first: once the count below and the end of the submission
  // are done, the destructor may free the pool.
  pool_closed refusal("weft: pool '" + name_ +
                      "' is being destroyed and takes no new jobs; submit before its "
                      "destruction begins, or from one of its own jobs");
  count_finished(*t.cache, t.epoch, t.submission);
  end_submission(t);
  throw refusal;
}

std::uint64_t pool::total(std::atomic<std::uint64_t> (detail::job_cache::*count)[2],
                          unsigned first_parity, unsigned last_parity) const noexcept {
  // seq_cst loads: the second half of the Dekker pairs in check_open() and
  // wake_idle_waiters().
  std::uint64_t sum = 0;
  auto add = [&](const detail::job_cache& c) {
    for (unsigned e = first_parity; e <= last_parity; ++e) {
      sum += (c.*count)[e].load(std::memory_order_seq_cst);
    }
  };
  add(external_cache_);
  for (const auto& w : workers_) add(w->cache);
  const detail::lane_set& lanes = *lanes_;
  for (std::size_t i = 0, n = lanes.size(); i < n; ++i) add(lanes[i].cache);
  return sum;
}

bool pool::quiescent(unsigned first_parity, unsigned last_parity) const noexcept {
  // Counts only grow, and a job's finish is counted after its spawn (and
  // after the spawns of everything it spawned, which share its parity). If
  // the spawned totals read before and after the finished total agree,
  // nothing was spawned in between, and finished == spawned means every job
  // counted so far has finished at the moment finished was read
  // (docs/waiting.md).
  const auto spawned = &detail::job_cache::spawned;
  const std::uint64_t spawned_before = total(spawned, first_parity, last_parity);
  const std::uint64_t finished = total(&detail::job_cache::finished, first_parity, last_parity);
  const std::uint64_t spawned_after = total(spawned, first_parity, last_parity);
  return spawned_before == spawned_after && finished == spawned_after;
}

bool pool::submissions_ended() const noexcept {
  auto ended = [](const detail::job_cache& c) {
    // Spawned first: a submission counts its spawn before it ends. Acquire
    // pairs with the release in end_submission(): the submitter's last
    // touch of the pool happens before our return.
    const std::uint64_t spawned =
        c.spawned[0].load(std::memory_order_seq_cst) + c.spawned[1].load(std::memory_order_seq_cst);
    return c.left.load(std::memory_order_acquire) == spawned;
  };
  if (!ended(external_cache_)) return false;
  const detail::lane_set& lanes = *lanes_;
  for (std::size_t i = 0, n = lanes.size(); i < n; ++i) {
    if (!ended(lanes[i].cache)) return false;
  }
  return true;
}

detail::heap_job* pool::allocate_job(detail::job_cache& from) {
  if (&from != &external_cache_) return from.allocate();  // the caller owns it
  std::lock_guard lock{external_mutex_};
  return external_cache_.allocate();
}

void pool::push(detail::job* j) {
  if (sequential()) {
    std::lock_guard lock{sequential_mutex_};
    sequential_queue_.push_back(j);
    return;
  }
  detail::worker* self = detail::tls.self;
  if (self != nullptr && on_own_worker()) {
    self->deque.push(j);
  } else if (detail::lane* l = my_lane()) {
    l->queue.push(j);
  } else {
    injector_.push(j);
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
      std::lock_guard lock{sequential_mutex_};
      sequential_queue_.insert(sequential_queue_.end(), jobs, jobs + n);
      return n;
    } else if (detail::lane* l = my_lane()) {
      l->queue.push_many(jobs, n);
    } else {
      injector_.push_many(jobs, n);
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
    // Relaxed: see find_work().
    if (j != nullptr && attention_.load(std::memory_order_relaxed) != 0) [[unlikely]] {
      return hold_if_paused(j, injector_);
    }
    return j;
  }
  detail::job* j = take_own(*self);
  if (j == nullptr) {
    // Going to look elsewhere is a good moment to hand our counts to a
    // waiter: a feeder's long jobs each come from elsewhere.
    if (flush_requested()) hand_over_counts(*self);
    j = find_elsewhere(self);
    if (j == nullptr) return nullptr;
    // Relaxed: see find_work().
    if (attention_.load(std::memory_order_relaxed) != 0) [[unlikely]] {
      j = hold_if_paused(j, injector_);
      if (j == nullptr) return nullptr;
    }
  }
  detail::worker::bump(self->counts.jobs);
  return j;
}

detail::job* pool::find_elsewhere(detail::worker* self) {
  if (sequential()) {
    std::lock_guard lock{sequential_mutex_};
    if (sequential_queue_.empty()) return nullptr;
    detail::job* j = sequential_queue_.front();
    sequential_queue_.pop_front();
    return j;
  }
  if (detail::job* j = take_from_lanes(self)) return j;
  if (!injector_.empty()) {
    if (self == nullptr) return injector_.pop();
    self->batch.clear();
    detail::job* j = injector_.pop(&self->batch, injector_batch);
    keep_batch(*self, false);
    if (j != nullptr) return j;
  }
  return steal_from_workers(self);
}

void pool::keep_batch(detail::worker& self, bool far_behind) {
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
  sleep_.new_work();
}

detail::job* pool::take_from_lanes(detail::worker* self) {
  const detail::lane_set& lanes = *lanes_;
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
      keep_batch(*self, got >= lane_batch && left >= lane_backlog);
    }
    return taken[0];
  }
  return nullptr;
}

detail::job* pool::steal_from_workers(detail::worker* self) {
  // Relaxed: a deque missed by a stale count is seen by the look before
  // sleeping (work_for(), which scans every slot).
  const std::size_t n = active_.load(std::memory_order_relaxed);
  static thread_local std::uint64_t outsider_rng = 0x2545F4914F6CDD1DULL;
  const std::size_t start = next_random(self != nullptr ? self->rng : outsider_rng) % n;
  for (std::size_t k = 0; k < n; ++k) {
    detail::worker& victim = *workers_[(start + k) % n];
    if (&victim == self) continue;
    if (self != nullptr) detail::worker::bump(self->counts.steal_attempts);
    if (detail::job* j = victim.deque.steal()) {
      if (self != nullptr) detail::worker::bump(self->counts.steals);
      if (tracer_ != nullptr && self != nullptr) [[unlikely]] {
        tracer_->ring(self->index).instant(detail::trace_kind::steal, tracer_->now(), victim.index);
      }
      return j;
    }
  }
  return nullptr;
}

bool pool::lanes_filling(std::int64_t& last_pushed) const noexcept {
  // Only lanes hold work, they hold less than a batch, and their threads
  // pushed since the last look.
  if (!injector_.empty()) return false;
  for (const auto& w : workers_) {
    if (!w->deque.empty()) return false;
  }
  const detail::lane_set& lanes = *lanes_;
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

bool pool::outside_queues_empty() const noexcept {
  if (!injector_.empty()) return false;
  const detail::lane_set& lanes = *lanes_;
  for (std::size_t i = 0, n = lanes.size(); i < n; ++i) {
    if (!lanes[i].queue.empty()) return false;
  }
  return true;
}

bool pool::all_queues_empty() const noexcept {
  if (!outside_queues_empty()) return false;
  return std::all_of(workers_.begin(), workers_.end(),
                     [](const auto& w) { return w->deque.empty(); });
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

void pool::write_trace(const std::string& path) const {
  if (tracer_ == nullptr) {
    throw usage_error(
        "weft::pool::write_trace: this pool records no trace; set pool_options::trace "
        "(or the environment variable WEFT_TRACE) to a file name when creating it");
  }
  tracer_->write_file(path, name_);
}

template <class Done, class Block>
void pool::wait_on_latch(const detail::latch& l, Done& done, Block&& block,
                         std::chrono::steady_clock::time_point deadline) {
  // nap_until() subscribes a waiter to the latch; it does not change its
  // value. A thread that helps naps on the latch when it has nothing to
  // run, and set() wakes it (docs/waiting.md, "A worker's wait that finds
  // nothing to run").
  auto nap = [&l, deadline](std::chrono::microseconds d) {
    const_cast<detail::latch&>(l).nap_until(
        std::min(std::chrono::steady_clock::now() + d, deadline));
  };
  // Our worker (or a thread running our sequential jobs) keeps the pool
  // alive. Any other thread saw the latch unset but may not touch the pool
  // until it has published its visit and checked again: the pool is
  // destroyed once the latch's job has finished (docs/waiting.md).
  if (detail::tls.owner == this) {
    wait_on(done, block, nap);
    return;
  }
  detail::fault::at(detail::fault::await_point::entered);
  const detail::visit_scope visit{this};
  if (l.is_set_now()) return;
  detail::fault::at(detail::fault::await_point::visiting);
  wait_on(done, block, nap);
}

pool::stand_in_scope::stand_in_scope(pool& p) : p_(p) {
  // Only a thread that is nobody to any pool: not a worker, not running a
  // sequential pool's jobs, helping none, in no worker hook (all of which
  // this_worker::index() reports).
  const detail::context& ctx = detail::tls;
  if (ctx.owner != nullptr || ctx.helping != nullptr ||
      ctx.helper_index != detail::no_helper_index || p.sequential() || p.size() < 2 || p.paused()) {
    return;
  }
  helper_.emplace(p);
  if (!helper_->held()) {
    helper_.reset();
    return;
  }
  try {
    ticket_ = p.count_spawn();  // throws pool_closed once the destructor has begun
  } catch (...) {
    helper_.reset();
    throw;
  }
  running_.emplace(&p, ticket_.epoch);
  p.sleep_.enter_guest();
  detail::tls.standing_in = &p;
  held_ = true;
}

pool::stand_in_scope::~stand_in_scope() {
  if (!held_) return;
  detail::tls.standing_in = nullptr;
  running_.reset();  // the innermost scope of this thread: unlinked first
  // A producer that saw the guest did not wake a sleeper for its job: the
  // seq_cst loads of this re-check pair with its push, as leave_guest()'s
  // RMW pairs with its load of the state (detail/sleep.hpp).
  p_.sleep_.leave_guest();
  if (!p_.all_queues_empty()) p_.sleep_.new_work();
  helper_.reset();
  p_.count_finished(*ticket_.cache, ticket_.epoch, 1);
  p_.end_submission(ticket_);  // last: the pool may be destroyed from here on
}

void pool::await(const detail::latch& l) {
  auto is_set = [&l] { return l.is_set(); };
  // block() installs our parker in the latch; it does not change its value.
  wait_on_latch(
      l, is_set, [&] { const_cast<detail::latch&>(l).block(); },
      std::chrono::steady_clock::time_point::max());
}

bool pool::help_from_lane(detail::lane& mine) noexcept {
  const helper_scope helper{*this};
  if (!helper.held()) return false;
  detail::job* j = nullptr;
  // Our visit (pool::await) or the wait's contract keeps the pool, and so
  // the lane, alive.
  if (mine.queue.take(&j, 1) == 0) return false;
  // j is counted and has not finished, so the destructor cannot get past
  // its drain before j retires: the pool is alive until then. Count
  // ourselves a visitor, as help_loop() does, for what retire() touches
  // after the finish count. Relaxed: it precedes j's seq_cst finish count
  // in program order, which the destructor reads before visitors_.
  visitors_.fetch_add(1, std::memory_order_relaxed);
  ++detail::tls.depth;
  execute(j);
  --detail::tls.depth;
  // Release pairs with the acquire load in the destructor.
  visitors_.fetch_sub(1, std::memory_order_release);
  return true;
}

bool pool::await_until(const detail::latch& l, std::chrono::steady_clock::time_point deadline) {
  // A worker helps until the latch is set or the deadline has passed (it
  // looks between jobs, so a long job makes it late).
  auto set_or_late = [&] { return l.is_set() || std::chrono::steady_clock::now() >= deadline; };
  wait_on_latch(
      l, set_or_late, [&] { const_cast<detail::latch&>(l).block_until(deadline); }, deadline);
  return l.is_set();
}

template <class Done>
void pool::block_until(Done& done) {
  // quiescent()'s seq_cst loads also make the jobs' effects visible: they
  // read the counts the jobs' runners increased after running them.
  std::unique_lock lock{idle_mutex_};
  // seq_cst: see wake_idle_waiters().
  idle_waiters_.fetch_add(1, std::memory_order_seq_cst);
  // Relaxed: a hint for the workers (flush_requested()).
  flush_wanted_.fetch_add(1, std::memory_order_relaxed);
  // A worker that runs out of work wakes us (flush()). One that never does
  // hands its counts over without waking anybody (flush_now_and_then()), so
  // re-check every millisecond: only while somebody waits on a busy pool.
  while (!idle_cv_.wait_for(lock, std::chrono::milliseconds{1}, done)) {
  }
  flush_wanted_.fetch_sub(1, std::memory_order_relaxed);
  idle_waiters_.fetch_sub(1, std::memory_order_relaxed);
}

template <class Done>
void pool::nap_until_idle(Done& done, std::chrono::microseconds d,
                          std::optional<std::chrono::steady_clock::time_point> deadline) {
  if (deadline) {
    d = std::min(d, std::chrono::ceil<std::chrono::microseconds>(*deadline -
                                                                 std::chrono::steady_clock::now()));
    if (d <= std::chrono::microseconds::zero()) return;
  }
  detail::worker* self = detail::tls.self;
  if (self == nullptr) {
    std::this_thread::sleep_for(d);
    return;
  }
  detail::fault::before_nap();
  // In the list, under idle_mutex_, from its construction to its
  // destruction, however the nap ends.
  struct listed {
    pool& p;
    idle_napper node;
    listed(pool& owner, detail::parker& parker) : p(owner), node{&parker, nullptr} {
      const std::lock_guard lock{p.idle_mutex_};
      node.next = p.idle_nappers_;
      p.idle_nappers_ = &node;
      // seq_cst: as block_until()'s, a Dekker pair with wake_idle_waiters():
      // either the look at done() below sees the jobs finished, or their
      // runner sees us and its notify_idle(), which takes the lock after
      // ours, unparks us.
      p.idle_waiters_.fetch_add(1, std::memory_order_seq_cst);
    }
    listed(const listed&) = delete;
    listed& operator=(const listed&) = delete;
    ~listed() {
      const std::lock_guard lock{p.idle_mutex_};
      idle_napper** link = &p.idle_nappers_;
      while (*link != &node) link = &(*link)->next;
      *link = node.next;
      p.idle_waiters_.fetch_sub(1, std::memory_order_relaxed);
    }
  } const me{*this, self->nap};
  if (!done()) self->nap.park_for(d);
}

void pool::notify_idle() {
  {
    // Taking the lock orders this notification against a blocked waiter
    // between its check of quiescent() and its wait. A napper leaves the
    // list under it too, so its parker (its worker's, alive while it waits
    // here) is unparked only while it is still in the list.
    std::lock_guard lock{idle_mutex_};
    for (idle_napper* n = idle_nappers_; n != nullptr; n = n->next) n->parker->unpark();
  }
  idle_cv_.notify_all();
}

template <class Wait>
bool pool::drain_epochs(std::uint64_t target, Wait&& wait_until_drained) {
  // Epoch e's jobs are counted in parity e & 1. Epochs drain in order, and
  // a parity is reused (by the flip to e + 2) only after epoch e was seen
  // drained, so a parity never holds two epochs' jobs (docs/waiting.md).
  for (;;) {
    // Acquire pairs with the release store below (another waiter's).
    const std::uint64_t drained = drained_epoch_.load(std::memory_order_acquire);
    if (drained >= target) return true;
    const std::uint64_t e = drained + 1;
    {
      std::lock_guard lock{epoch_mutex_};
      // Epoch e - 1 has drained, so parity (e + 1) & 1 is free: move new
      // submissions there. seq_cst: ordered with the load in spawn_epoch().
      if (epoch_.load(std::memory_order_relaxed) == e) {
        epoch_.store(e + 1, std::memory_order_seq_cst);
      }
    }
    // Until the parity is quiescent, or another waiter has seen epoch e
    // drained: after that the parity may be reused for epoch e + 2, whose
    // jobs came after us. False: the caller gave up (a timed wait); epoch e
    // is left for the next waiter to record.
    if (!wait_until_drained(e)) return false;
    bool recorded = false;
    {
      std::lock_guard lock{epoch_mutex_};
      if (drained_epoch_.load(std::memory_order_relaxed) < e) {
        // Release pairs with the acquire loads above and in wait().
        drained_epoch_.store(e, std::memory_order_release);
        recorded = true;
      }
    }
    // Other waiters blocked on epoch e may stop now. seq_cst: as in
    // wake_idle_waiters(), against a blocking waiter's increment and check.
    if (recorded && idle_waiters_.load(std::memory_order_seq_cst) != 0) notify_idle();
  }
}

void pool::wait() { wait_until_idle(std::nullopt); }

bool pool::wait_until_idle(std::optional<std::chrono::steady_clock::time_point> deadline) {
  if (on_own_worker()) {
    throw usage_error("weft::pool::wait() was called from a job of pool '" + name_ +
                      "' and would wait for itself; wait on a future or a task_group there, "
                      "or use wait_until()");
  }
  if (detail::tls.standing_in == this) {
    throw usage_error(
        "weft::pool::wait() was called from an element function of a parallel "
        "algorithm whose caller runs it in a worker's place on pool '" +
        name_ +
        "', and would wait for that loop itself; wait on a future or a "
        "task_group there, or use wait_until()");
  }
  // Jobs submitted from now on belong to a later epoch than target; the
  // ones submitted so far, and everything they spawn, to target or earlier.
  const std::uint64_t target = epoch_.load(std::memory_order_seq_cst);
  // A worker of another pool waits by helping its own pool and never blocks
  // here: tell our workers to hand over their counts meanwhile
  // (flush_requested). A blocking waiter does so through idle_waiters_.
  const pool* own = detail::tls.owner;
  const bool helping = !sequential() && own != nullptr && !own->sequential();
  // Relaxed: a hint; see flush_requested().
  if (helping) flush_wanted_.fetch_add(1, std::memory_order_relaxed);
  struct leave_guard {
    std::atomic<std::size_t>* waiters;
    ~leave_guard() {
      if (waiters != nullptr) waiters->fetch_sub(1, std::memory_order_relaxed);
    }
  } guard{helping ? &flush_wanted_ : nullptr};
  auto late = [&deadline] { return deadline && std::chrono::steady_clock::now() >= *deadline; };
  const bool idle = drain_epochs(target, [&](std::uint64_t e) {
    const auto parity = static_cast<unsigned>(e & 1);
    auto drained = [this, parity, e] {
      // Acquire pairs with the release store in drain_epochs().
      return drained_epoch_.load(std::memory_order_acquire) >= e || quiescent(parity, parity);
    };
    // A timed wait also stops at the deadline; block_until() looks at it
    // at least every millisecond.
    auto drained_or_late = [&] { return drained() || late(); };
    auto nap = [&](std::chrono::microseconds d) { nap_until_idle(drained_or_late, d, deadline); };
    wait_on(
        drained_or_late, [&] { block_until(drained_or_late); }, nap);
    return drained();
  });
  if (!idle) return false;
  rethrow_pending_error();
  return true;
}

pool_stats pool::stats() const {
  pool_stats s;
  s.workers = size();
  s.job_slots = external_cache_.capacity();
  const detail::lane_set& lanes = *lanes_;
  s.lanes = lanes.size();
  for (std::size_t i = 0; i < s.lanes; ++i) s.job_slots += lanes[i].cache.capacity();
  for (const auto& w : workers_) s.job_slots += w->cache.capacity();
  counters_.read(s, workers_);
  return s;
}

void pool::reset_stats() { counters_.reset(workers_); }

void pool::worker_main(detail::worker& w, detail::worker_start* start) {
  name_thread(name_, w.index);
  // Pinning and the start hook; on failure the constructor throws.
  if (start != nullptr && !start->run(w.index)) return;
  detail::tls = detail::context{this, &w, 0};
  for (;;) {
    detail::job* j = find_work(&w);
    if (j == nullptr) {
      flush(w);
      const std::uint64_t idle_from = detail::counters::now_ns();
      // Relaxed: a counter (stats()).
      w.counts.idle_since.store(idle_from + 1, std::memory_order_relaxed);
      j = idle(w);
      detail::worker::bump(w.counts.idle_ns, detail::counters::now_ns() - idle_from);
      w.counts.idle_since.store(0, std::memory_order_relaxed);
    }
    if (j == nullptr) break;  // the pool is stopping, or we are leaving it
    execute(j);
    flush_now_and_then(w);
  }
  if (leaving(w)) retire(w);
  if (!on_worker_stop_) return;
  detail::tls = detail::context{};
  try {
    detail::call_worker_hook(on_worker_stop_, w.index);
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
        if (worth_a_look(w, full)) {
          if (leaving(w)) break;
          // A lane whose thread is still pushing: let a batch build up
          // instead of taking its jobs one by one, which costs the producer
          // a cache miss per job, and look less often meanwhile. A lane that
          // stopped growing (a submit/get ping-pong) is taken at once.
          if (lanes_filling(last_pushed)) {
            pauses = std::min(pauses * 2, max_pauses_while_filling);
            continue;
          }
          if (detail::job* j = find_work(&w)) {
            // Producers that saw us searching woke nobody; if we were the
            // last searcher and work is left, wake a sleeper for it.
            if (sleep_.stop_searching() && work_for(w)) sleep_.new_work();
            return j;
          }
        }
      }
    }
    // Announce, look once more, then park (docs/sleep.md).
    sleep_.prepare(searching);
    if (work_for(w)) {
      sleep_.cancel();  // sleeping -> searching
      searching = true;
      continue;
    }
    const std::uint64_t parked_at = tracer_ != nullptr ? tracer_->now() : 0;
    detail::worker::bump(w.counts.parks);
    const mail_check mail{this, &w};
    const bool woken = sleep_.park(&pool::mail_for, &mail);
    if (woken) detail::worker::bump(w.counts.wakeups);
    if (tracer_ != nullptr) [[unlikely]] {
      tracer_->ring(w.index).span(detail::trace_kind::parked, "parked", parked_at, tracer_->now());
    }
    if (!woken) return nullptr;  // stopping; else woken: searching
    searching = true;
  }
}

pool& default_pool() {
  static pool instance{pool_options{.threads = available_parallelism(), .name = "weft-default"}};
  return instance;
}

}  // namespace weft
