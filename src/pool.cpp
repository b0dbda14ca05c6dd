#include "weft/pool.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/search.hpp"
#include "weft/detail/visit.hpp"
#include "weft/detail/worker_start.hpp"

namespace weft {

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
      roster_(options.cpus, options.on_worker_start, std::move(options.on_worker_stop)),
      bound_(options.capacity, std::move(options.on_full)),
      errors_(std::move(options.on_error)) {
  // Checks cpus before any thread starts (src/worker_start.cpp).
  detail::worker_start start{options.threads, roster_.cpus(), roster_.on_start(), name_};
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
  attention_.make_mailboxes(slots);
  roster_.make_slots(slots, detail::search::largest_batch);
  roster_.start_with(threads);
  // Every worker slot exists before any thread starts, so thieves can scan
  // the slots without synchronisation. With pinning or a start hook, every
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
    accounting_.close();
    sleep_.stop();
    for (const auto& w : roster_.all()) {
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
      detail::worker& w = roster_[started];
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
  // A submitter either sees the pool closing (check_open()), or its job is
  // seen by the drain below (accounting::close()).
  accounting_.close();
  // Timers that have not fired never will (docs/control.md, "Timers"): stop
  // the timer thread before the drain. Acquire pairs with the release CAS
  // that published the service (src/timer.cpp).
  detail::stop_timers(timers_.load(std::memory_order_acquire), false);
  drain_all();  // src/core/wait.cpp
  // Every job has finished. Submitters that are not workers may still be
  // between their count and their last touch of the pool (waking a worker,
  // or leaving after a refusal), and threads that ran jobs outside the pool
  // may still be leaving help_until(): wait for both, briefly.
  while (!submissions_ended() || guests_.anyone_inside()) std::this_thread::yield();
  // And threads that waited on our jobs' futures may still be leaving the
  // wait (visit_scope).
  detail::wait_for_visits(this);
  // Nobody can make a timer any more: a service made during the drain (by
  // one of our jobs, or a submitter that got in just before close()) is
  // stopped too, and the pool lets go of it. Acquire: as above.
  detail::stop_timers(timers_.load(std::memory_order_acquire), true);
  sleep_.stop();
  {
    std::lock_guard lock{roster_.resize_mutex()};
    for (const auto& w : roster_.all()) {
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

pool::ticket pool::count_shared(std::uint32_t n) { return count_against(accounting_.shared(), n); }

void pool::add_spawned(detail::job_cache& c, unsigned epoch, std::uint32_t n) {
  std::atomic<std::uint64_t>& spawned = c.spawned[epoch];
  // seq_cst: see check_open() and count_against().
  if (accounting_.is_shared(c)) {
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
  // seq_cst, as the re-reads below: ordered with the flip in
  // accounting::drain().
  std::uint64_t seen = accounting_.epoch();
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
    const std::uint64_t now = accounting_.epoch();
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
  // The caller's seq_cst increment of a spawned count and this seq_cst load
  // pair with the destructor's accounting::close() and its seq_cst loads in
  // quiescent(): a submitter either sees the pool closing, or the
  // destructor sees its job and waits for it.
  if (!accounting_.closing() || on_own_worker()) return;
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
  // idle_waiters::wake().
  std::uint64_t sum = 0;
  auto add = [&](const detail::job_cache& c) {
    for (unsigned e = first_parity; e <= last_parity; ++e) {
      sum += (c.*count)[e].load(std::memory_order_seq_cst);
    }
  };
  add(accounting_.shared());
  for (const auto& w : roster_.all()) add(w->cache);
  const detail::lane_set& lanes = queues_.lanes();
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
  if (!ended(accounting_.shared())) return false;
  const detail::lane_set& lanes = queues_.lanes();
  for (std::size_t i = 0, n = lanes.size(); i < n; ++i) {
    if (!ended(lanes[i].cache)) return false;
  }
  return true;
}

void pool::write_trace(const std::string& path) const {
  if (tracer_ == nullptr) {
    throw usage_error(
        "weft::pool::write_trace: this pool records no trace; set pool_options::trace "
        "(or the environment variable WEFT_TRACE) to a file name when creating it");
  }
  tracer_->write_file(path, name_);
}

pool_stats pool::stats() const {
  pool_stats s;
  s.workers = size();
  s.job_slots = accounting_.shared().capacity();
  const detail::lane_set& lanes = queues_.lanes();
  s.lanes = lanes.size();
  for (std::size_t i = 0; i < s.lanes; ++i) s.job_slots += lanes[i].cache.capacity();
  for (const auto& w : roster_.all()) s.job_slots += w->cache.capacity();
  counters_.read(s, roster_.all());
  return s;
}

void pool::reset_stats() { counters_.reset(roster_.all()); }

pool& default_pool() {
  static pool instance{pool_options{.threads = available_parallelism(), .name = "weft-default"}};
  return instance;
}

}  // namespace weft
