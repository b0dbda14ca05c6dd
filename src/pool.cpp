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
  roster_.make_slots(slots, detail::search_tuning::largest_batch);
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
  while (!counting::submissions_ended(*this) || guests_.anyone_inside()) {
    std::this_thread::yield();
  }
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
