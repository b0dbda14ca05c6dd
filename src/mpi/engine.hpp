// Private to src/mpi/: the progress engine, which polls MPI requests and
// turns their completions into futures or callbacks (docs/mpi.md,
// "Progress"). Its members are defined in the class, as they were before
// the split; engine::complete() is in src/mpi/engine.cpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "weft/continuation.hpp"  // detail::deferred_job, continuation_access
#include "weft/detail/clock.hpp"
#include "weft/detail/scheduler.hpp"
#include "weft/mpi.hpp"

namespace weft::mpi::detail {

using weft::detail::continuation_access;
using weft::detail::deferred_job;
using weft::detail::scheduler;

// min(2 * d, most) for 0 < d <= most, without overflow: the options may be
// as long as microseconds::max().
inline std::chrono::microseconds doubled(std::chrono::microseconds d,
                                         std::chrono::microseconds most) {
  return d > most / 2 ? most : d * 2;
}

inline std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

inline void check_mpi_ready(const char* who) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (initialised == 0 || finalised != 0) {
    throw usage_error(std::string(who) +
                      ": MPI is not initialised (or already finalised); call MPI_Init_thread "
                      "with MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE first");
  }
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_SERIALIZED) {
    throw usage_error(std::string(who) +
                      ": MPI was initialised below MPI_THREAD_SERIALIZED; weft calls MPI from its "
                      "worker threads (one at a time), so initialise with MPI_Init_thread(..., "
                      "MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE, ...)");
  }
}

inline void check_pool(pool& p, const char* who) {
  if (p.size() == 0) {
    throw usage_error(std::string(who) +
                      ": the pool is in sequential mode, which has no worker to run what "
                      "completed requests release; give it at least one thread");
  }
}

// A request's future: a job counted by the pool from the moment it is made
// and queued when the engine sees the request complete (or gives up on it).
struct request_job final : deferred_job<MPI_Status, request_job> {
  request_job(pool& owner, const continuation_access::counted& c) noexcept
      : deferred_job<MPI_Status, request_job>(owner, c) {}
  void gather() {
    if (!failure.empty()) throw weft::mpi::error(failure);
    value.emplace(status);
  }
  MPI_Status status{};
  std::string failure;  // set when the request failed or was given up
};

// One request the engine knows of: either a future's (job) or the flow's
// own bookkeeping (callback). Guarded by the engine's mutex.
struct entry {
  request_job* job = nullptr;
  void (*callback)(void* context, const MPI_Status& status, const std::string& failure) = nullptr;
  void* context = nullptr;
  // A flow's data transfer: its failure aborts that flow (not set for
  // progress::after's requests, whose futures carry it).
  flow_state* aborts = nullptr;
  // A flow's own future: its failure is the flow's to report (the future
  // is dropped unread, so an exception in it would reach the pool's error
  // path as well).
  bool internal = false;
  bool data = true;              // keeps the polling thread going while pending
  std::size_t expect_bytes = 0;  // a flow's receive: the size it must get
  // A probe (arm_probe): complete once a message from `source` with `tag`
  // is there to receive, without receiving it.
  int source = MPI_ANY_SOURCE;
  int tag = MPI_ANY_TAG;
  MPI_Comm comm = MPI_COMM_NULL;
  bool done = false;  // completed, failed or given up: never armed again
  std::size_t unarmed_index = static_cast<std::size_t>(-1);
};

class engine {
 public:
  engine(pool& p, progress_options options) : pool_(p), options_(options) {
    if (options_.min_interval.count() <= 0 || options_.max_interval < options_.min_interval) {
      throw usage_error("weft::mpi: progress_options needs 0 < min_interval <= max_interval");
    }
    interval_ = options_.min_interval;
    scheduler::add_idle_listener(pool_, listener_);
    try {
      poller_ = std::thread([this] { poll_loop(); });
    } catch (...) {
      scheduler::remove_idle_listener(pool_, listener_);
      throw;
    }
  }
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;
  ~engine() {
    // First: no worker calls worker_idle() once this returns.
    scheduler::remove_idle_listener(pool_, listener_);
    stop_polling();
  }

  struct promise {
    std::shared_ptr<entry> e;
    future<MPI_Status> f;
  };

  // A future whose request is started later (arm).
  promise make_promise(flow_state* aborts) {
    const continuation_access::counted counted{pool_};
    auto e = std::make_shared<entry>();
    e->aborts = aborts;
    e->internal = aborts != nullptr;
    auto* j = new request_job(pool_, counted);
    e->job = j;
    future<MPI_Status> f = weft::detail::future_access::make<MPI_Status>(j);
    {
      const std::lock_guard lock{mutex_};
      if (closed_ || failing_) {
        e->done = true;
        if (!e->internal) {
          j->failure = closed_ ? "weft::mpi: the progress engine was stopped"
                               : "weft::mpi: the distributed flow was aborted";
        }
      } else {
        e->unarmed_index = unarmed_.size();
        unarmed_.push_back(e);
      }
    }
    if (e->done) j->queue();
    return {std::move(e), std::move(f)};
  }

  // Starts e's request with start(&request) under the lock, unless e was
  // given up meanwhile (abort, close): returns false then, having started
  // nothing. An MPI error from start fails e.
  template <class Start>
  bool arm(const std::shared_ptr<entry>& e, Start&& start) {
    int rc = MPI_SUCCESS;
    {
      const std::lock_guard lock{mutex_};
      if (e->done) return false;
      unlink_unarmed(*e);
      MPI_Request r = MPI_REQUEST_NULL;
      rc = start(&r);
      if (rc == MPI_SUCCESS) {
        active_.push_back(e);
        requests_.push_back(r);
        if (e->data) ++data_pending_;
        interval_ = options_.min_interval;
      } else {
        e->done = true;
      }
    }
    if (rc != MPI_SUCCESS) {
      complete(*e, MPI_Status{}, "weft::mpi: starting a request failed: " + mpi_error_text(rc));
      return false;
    }
    kick();
    return true;
  }

  // Completes e once a message from `source` with `tag` on comm can be
  // received (MPI_Iprobe at each poll; nothing is matched, so the receive
  // posted afterwards takes that message: the flow has at most one receive
  // or probe per object outstanding on a rank, and the object's messages
  // all come from its owner with its tag). False if e was given up.
  bool arm_probe(const std::shared_ptr<entry>& e, int source, int tag, MPI_Comm comm) {
    {
      const std::lock_guard lock{mutex_};
      if (e->done) return false;
      unlink_unarmed(*e);
      e->source = source;
      e->tag = tag;
      e->comm = comm;
      probing_.push_back(e);
      if (e->data) ++data_pending_;
      interval_ = options_.min_interval;
    }
    kick();
    return true;
  }

  // Completes e (successfully) without any request, unless it was given up.
  void settle(const std::shared_ptr<entry>& e) {
    {
      const std::lock_guard lock{mutex_};
      if (e->done) return;
      unlink_unarmed(*e);
      e->done = true;
    }
    MPI_Status st{};
    st.MPI_ERROR = MPI_SUCCESS;
    complete(*e, st, "");
  }

  // A bookkeeping request (control message, abort notice): its callback runs
  // on completion, with the failure text if it failed.
  template <class Start>
  bool watch(Start&& start, void (*callback)(void*, const MPI_Status&, const std::string&),
             void* context, bool data) {
    auto e = std::make_shared<entry>();
    e->callback = callback;
    e->context = context;
    e->data = data;
    {
      const std::lock_guard lock{mutex_};
      if (closed_) return false;
    }
    return arm(e, std::forward<Start>(start));
  }

  // One MPI call under the engine's lock (MPI_THREAD_SERIALIZED).
  template <class Call>
  int call(Call&& c) {
    const std::lock_guard lock{mutex_};
    if (closed_) return MPI_ERR_OTHER;
    return c();
  }

  std::size_t poll(bool block_for_lock = false) {
    std::vector<std::pair<std::shared_ptr<entry>, MPI_Status>> finished;
    std::vector<std::shared_ptr<entry>> failed;
    std::string failure;
    {
      std::unique_lock lock{mutex_, std::defer_lock};
      if (block_for_lock) {
        lock.lock();
      } else if (!lock.try_lock()) {
        return 0;
      }
      if (closed_ || (requests_.empty() && probing_.empty())) return 0;
      ++stats_.polls;
      probe_all(finished, failed, failure);
      const auto n = static_cast<int>(requests_.size());
      indices_.resize(requests_.size());
      statuses_.resize(requests_.size());
      int count = 0;
      const int rc =
          n == 0 ? MPI_SUCCESS
                 : MPI_Testsome(n, requests_.data(), &count, indices_.data(), statuses_.data());
      if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
        // The whole call failed: nothing can be said of any request, so all
        // are given up (their futures and flows get the error).
        failure = "weft::mpi: MPI_Testsome failed: " + mpi_error_text(rc);
        for (std::size_t i = 0; i < active_.size(); ++i) {
          free_request(requests_[i]);
          active_[i]->done = true;
          failed.push_back(active_[i]);
        }
        active_.clear();
        requests_.clear();
        data_pending_ = static_cast<std::size_t>(
            std::count_if(probing_.begin(), probing_.end(), [](const auto& e) { return e->data; }));
      } else if (count != MPI_UNDEFINED && count > 0) {
        stats_.completed += static_cast<std::uint64_t>(count);
        std::vector<int> gone(indices_.begin(), indices_.begin() + count);
        for (int k = 0; k < count; ++k) {
          MPI_Status st = statuses_[static_cast<std::size_t>(k)];
          if (rc != MPI_ERR_IN_STATUS) st.MPI_ERROR = MPI_SUCCESS;
          const std::shared_ptr<entry>& e =
              active_[static_cast<std::size_t>(gone[static_cast<std::size_t>(k)])];
          e->done = true;
          finished.emplace_back(e, st);
        }
        // Remove from the back so that the indices still to go stay valid.
        std::sort(gone.begin(), gone.end(), std::greater<>{});
        for (const int g : gone) {
          const auto i = static_cast<std::size_t>(g);
          if (active_[i]->data) --data_pending_;
          active_[i] = std::move(active_.back());
          active_.pop_back();
          requests_[i] = requests_.back();
          requests_.pop_back();
        }
        interval_ = options_.min_interval;
      } else if (finished.empty()) {
        interval_ = doubled(interval_, options_.max_interval);
      }
    }
    for (auto& [e, st] : finished) {
      std::string text;
      int cancelled = 0;
      MPI_Test_cancelled(&st, &cancelled);
      int count = 0;
      if (cancelled != 0) {
        text = "weft::mpi: the request was cancelled";
      } else if (st.MPI_ERROR != MPI_SUCCESS) {
        text = "weft::mpi: the request failed: " + mpi_error_text(st.MPI_ERROR);
      } else if (e->expect_bytes != 0 && MPI_Get_count(&st, MPI_BYTE, &count) == MPI_SUCCESS &&
                 static_cast<std::size_t>(count) != e->expect_bytes) {
        text = "weft::mpi::flow: received " + std::to_string(count) + " bytes of an object of " +
               std::to_string(e->expect_bytes) +
               "; register every object with the same size on every rank";
      }
      complete(*e, st, text);
    }
    for (auto& e : failed) complete(*e, MPI_Status{}, failure);
    return finished.size() + failed.size();
  }

  // Gives up every data request: the unarmed ones are never started, the
  // pending ones are cancelled and freed (MPI_Cancel, MPI_Request_free: a
  // receive that already matched may still land in its buffer). Their
  // futures hold `why`. Bookkeeping requests stay.
  void give_up(const std::string& why, bool closing) {
    std::vector<std::shared_ptr<entry>> dropped;
    {
      const std::lock_guard lock{mutex_};
      failing_ = true;
      for (auto& e : unarmed_) {
        e->done = true;
        e->unarmed_index = static_cast<std::size_t>(-1);
        dropped.push_back(std::move(e));
      }
      unarmed_.clear();
      for (auto& e : probing_) {
        e->done = true;
        dropped.push_back(std::move(e));
      }
      probing_.clear();
      std::size_t kept = 0;
      for (std::size_t i = 0; i < active_.size(); ++i) {
        if (active_[i]->data || closing) {
          if (!closed_) {
            MPI_Cancel(&requests_[i]);
            free_request(requests_[i]);
          }
          active_[i]->done = true;
          dropped.push_back(std::move(active_[i]));
        } else {
          active_[kept] = std::move(active_[i]);
          requests_[kept] = requests_[i];
          ++kept;
        }
      }
      active_.resize(kept);
      requests_.resize(kept);
      data_pending_ = 0;
      if (closing) closed_ = true;
    }
    if (closing) stop_polling();
    for (auto& e : dropped) {
      // Whoever gives up is aborting or closing already: the failure of
      // these requests is the consequence, not a new error.
      e->aborts = nullptr;
      complete(*e, MPI_Status{}, why);
    }
  }

  [[nodiscard]] std::size_t pending() const {
    const std::lock_guard lock{mutex_};
    return active_.size() + unarmed_.size() + probing_.size();
  }
  [[nodiscard]] bool data_pending() const {
    const std::lock_guard lock{mutex_};
    return data_pending_ != 0;
  }
  [[nodiscard]] progress_stats statistics() const {
    const std::lock_guard lock{mutex_};
    return stats_;
  }
  [[nodiscard]] std::chrono::microseconds interval() const {
    const std::lock_guard lock{mutex_};
    return interval_;
  }

  // The thread in flow::wait() sleeps here until its tasks are done.
  template <class Done>
  void sleep_a_while(std::chrono::microseconds d, Done&& done) {
    std::unique_lock lock{waiter_mutex_};
    waiter_cv_.wait_for(lock, d, [&] { return woken_ || done(); });
    woken_ = false;
  }
  void wake_waiter() {
    {
      const std::lock_guard lock{waiter_mutex_};
      woken_ = true;
    }
    waiter_cv_.notify_all();
  }

 private:
  // poll(), under the lock: the probes whose message is there complete
  // (into `finished`), those whose MPI_Iprobe failed fail (into `failed`).
  void probe_all(std::vector<std::pair<std::shared_ptr<entry>, MPI_Status>>& finished,
                 std::vector<std::shared_ptr<entry>>& failed, std::string& failure) {
    std::size_t kept = 0;
    for (std::shared_ptr<entry>& e : probing_) {
      int flag = 0;
      MPI_Status st{};
      const int rc = MPI_Iprobe(e->source, e->tag, e->comm, &flag, &st);
      if (rc == MPI_SUCCESS && flag == 0) {
        if (&probing_[kept] != &e) probing_[kept] = std::move(e);
        ++kept;
        continue;
      }
      e->done = true;
      if (e->data) --data_pending_;
      if (rc != MPI_SUCCESS) {
        failure = "weft::mpi: MPI_Iprobe failed: " + mpi_error_text(rc);
        failed.push_back(std::move(e));
      } else {
        ++stats_.completed;
        st.MPI_ERROR = MPI_SUCCESS;
        finished.emplace_back(std::move(e), st);
      }
    }
    probing_.resize(kept);
  }

  void unlink_unarmed(entry& e) {
    if (e.unarmed_index == static_cast<std::size_t>(-1)) return;
    const std::size_t i = e.unarmed_index;
    unarmed_[i] = std::move(unarmed_.back());
    unarmed_.pop_back();
    if (i < unarmed_.size()) unarmed_[i]->unarmed_index = i;
    e.unarmed_index = static_cast<std::size_t>(-1);
  }

  static void free_request(MPI_Request& r) {
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  }

  void complete(entry& e, const MPI_Status& st, const std::string& failure);

  // The polling thread: sleeps (no CPU) while no data request is pending;
  // otherwise polls, and between polls that find nothing sleeps for the
  // current interval, which doubles up to max_interval. A new request or a
  // completion starts it again at min_interval. Not a worker: a polling job
  // on the pool cost ~110 us of CPU per poll here (a worker's wake-up and
  // its idle spin afterwards), against ~6 us for this thread's sleep and
  // wake (docs/mpi.md, "The progress engine").
  // While every worker of the pool is busy, a message that completes can
  // only wait for one of them to finish its job, so the thread polls every
  // busy_interval; a worker that runs out of work kicks it (worker_idle())
  // and it polls at once, then every interval() while a worker is idle
  // (docs/mpi.md, "The progress engine"). Each poll is a wake-up of this
  // thread, which on a machine whose cores the workers fill preempts one
  // of them.
  void poll_loop() {
    std::unique_lock lock{poll_mutex_};
    while (!stop_) {
      if (!data_pending()) {
        poll_cv_.wait(lock, [&] { return stop_ || kick_; });
        kick_ = false;
        continue;
      }
      lock.unlock();
      const std::size_t n = poll(true);
      lock.lock();
      if (n == 0 && !stop_ && !kick_) {
        // Relaxed: resting_ is a hint for worker_idle(), set before the
        // look at the pool so that a worker going idle after that look
        // kicks us. One that went idle just before, unseen by a stale
        // look, waits for the poll at the end of this rest (at most
        // busy_interval). A kick during a short rest only polls sooner.
        resting_.store(true, std::memory_order_relaxed);
        const std::chrono::microseconds rest =
            scheduler::someone_idle(pool_)
                ? interval()
                : std::max(options_.busy_interval, options_.max_interval);
        // Until a deadline, saturated: a rest of microseconds::max() is
        // "until kicked", with no overflow (weft/detail/clock.hpp).
        poll_cv_.wait_until(lock, weft::detail::deadline_after(rest, "weft::mpi::progress"),
                            [&] { return stop_ || kick_; });
        resting_.store(false, std::memory_order_relaxed);
      }
      kick_ = false;
    }
  }
  // On a worker that runs out of work: ends the poller's rest.
  static void worker_idle(void* self) noexcept {
    auto* e = static_cast<engine*>(self);
    // Relaxed: see poll_loop(); the exchange makes one worker kick per rest.
    if (!e->resting_.load(std::memory_order_relaxed) ||
        !e->resting_.exchange(false, std::memory_order_relaxed)) {
      return;
    }
    try {
      e->kick();
    } catch (...) {  // NOLINT(bugprone-empty-catch): the rest ends by itself
    }
  }
  void kick() {
    {
      const std::lock_guard lock{poll_mutex_};
      kick_ = true;
    }
    poll_cv_.notify_one();
  }
  void stop_polling() {
    {
      const std::lock_guard lock{poll_mutex_};
      stop_ = true;
    }
    poll_cv_.notify_one();
    if (poller_.joinable() && poller_.get_id() != std::this_thread::get_id()) poller_.join();
  }

  pool& pool_;
  const progress_options options_;
  mutable std::mutex mutex_;  // every MPI call the engine makes, and the lists below
  std::vector<std::shared_ptr<entry>> active_;   // started, not seen complete
  std::vector<MPI_Request> requests_;            // active_[i]'s request
  std::vector<std::shared_ptr<entry>> unarmed_;  // futures whose request is not started yet
  std::vector<std::shared_ptr<entry>> probing_;  // probes waiting for their message
  std::vector<int> indices_;
  std::vector<MPI_Status> statuses_;
  std::size_t data_pending_ = 0;
  std::chrono::microseconds interval_{};
  bool failing_ = false;
  bool closed_ = false;
  progress_stats stats_{};

  std::mutex poll_mutex_;  // taken before mutex_, never after
  std::condition_variable poll_cv_;
  bool kick_ = false;
  bool stop_ = false;
  // The poller is between two polls (poll_loop()).
  std::atomic<bool> resting_{false};
  weft::detail::idle_listener listener_{&worker_idle, this};
  std::thread poller_;

  std::mutex waiter_mutex_;
  std::condition_variable waiter_cv_;
  bool woken_ = false;
};

}  // namespace weft::mpi::detail
