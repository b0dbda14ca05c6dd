// weft::mpi: the progress engine (requests as futures) and the distributed
// flow built on it. docs/mpi.md describes both; the comments here say how.
#include "weft/mpi.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "weft/continuation.hpp"  // detail::deferred_job, continuation_access
#include "weft/detail/clock.hpp"
#include "weft/detail/scheduler.hpp"

namespace weft::mpi {
namespace detail {

using weft::detail::continuation_access;
using weft::detail::deferred_job;
using weft::detail::scheduler;

namespace {

// min(2 * d, most) for 0 < d <= most, without overflow: the options may be
// as long as microseconds::max().
std::chrono::microseconds doubled(std::chrono::microseconds d, std::chrono::microseconds most) {
  return d > most / 2 ? most : d * 2;
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

void check_mpi_ready(const char* who) {
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

void check_pool(pool& p, const char* who) {
  if (p.size() == 0) {
    throw usage_error(std::string(who) +
                      ": the pool is in sequential mode, which has no worker to run what "
                      "completed requests release; give it at least one thread");
  }
}

}  // namespace

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

// The data of an object registered with a view (register_data(x, owner,
// size, view[, release])): asked for by the rank's first transfer task of
// the object, and again by the first after a release. On the owner, send
// tasks (which only read x) may ask at the same time, hence the lock; on
// other ranks the receive and release tasks write x, so they never overlap.
struct lazy_data {
  std::function<std::span<std::byte>()> view;
  std::function<void()> release;  // empty if none was given
  std::mutex lock;
  void* data = nullptr;  // guarded by lock: null until asked, and after a release

  // The data's address; throws usage_error if the view shows other than the
  // `bytes` that register_data declared.
  void* resolve(std::size_t bytes) {
    const std::lock_guard<std::mutex> hold(lock);
    if (data != nullptr) return data;
    const std::span<std::byte> b = view();
    if (b.data() == nullptr) {
      throw usage_error(
          "weft::mpi::flow: an object's view showed no storage (a null span); the view must "
          "show the object's data, allocating them if need be");
    }
    if (b.size() != bytes) {
      throw usage_error("weft::mpi::flow: an object's view showed " + std::to_string(b.size()) +
                        " bytes where register_data declared " + std::to_string(bytes) +
                        "; the view must show the declared size on every rank");
    }
    data = b.data();
    return data;
  }

  // Whether this rank's data are allocated (asked for and not released).
  bool held() {
    const std::lock_guard<std::mutex> hold(lock);
    return data != nullptr;
  }

  // Frees a received copy (drop_copies): the next transfer asks the view
  // again. Nothing to do if the copy never arrived (its receive was skipped).
  void drop() {
    const std::lock_guard<std::mutex> hold(lock);
    if (data == nullptr || !release) return;
    release();
    data = nullptr;
  }
};

// Per registered object, on every rank (the producer's bookkeeping).
struct object_record {
  const void* object;  // what tasks declare (the local flow orders by it)
  void* data;          // what travels (null for a lazy object)
  std::size_t bytes;
  int owner;
  int tag;
  std::uint64_t version = 0;        // writes emplaced so far
  std::vector<std::uint64_t> have;  // the version each rank's instance holds
  std::unique_ptr<lazy_data> lazy;  // registered with a view: where data comes from
};

inline constexpr std::uint64_t hash_start = 14695981039346656037ULL;

// FNV-1a over the value's bytes: the program hash checked at wait().
std::uint64_t mix(std::uint64_t h, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xffU;
    h *= 1099511628211ULL;
  }
  return h;
}

// ---------------------------------------------------------------------------
// The distributed flow's state.

class flow_state {
 public:
  flow_state(pool& p, MPI_Comm comm, const flow_options& options)
      : engine_(std::make_shared<engine>(p, options.polling)), polling_(options.polling) {
    if (MPI_Comm_dup(comm, &comm_) != MPI_SUCCESS) {
      throw error("weft::mpi::flow: MPI_Comm_dup failed");
    }
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    int* upper = nullptr;
    int found = 0;
    MPI_Comm_get_attr(comm_, MPI_TAG_UB, static_cast<void*>(&upper), &found);
    tag_ub_ = found != 0 && upper != nullptr ? *upper : 32767;
    post_control_receive();
  }

  flow_state(const flow_state&) = delete;
  flow_state& operator=(const flow_state&) = delete;

  ~flow_state() {
    engine_->give_up("weft::mpi::flow: the flow was destroyed", true);
    MPI_Comm_free(&comm_);
  }

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }
  [[nodiscard]] MPI_Comm comm() const noexcept { return comm_; }
  [[nodiscard]] int tag_ub() const noexcept { return tag_ub_; }
  engine& eng() noexcept { return *engine_; }

  // Task bodies.
  [[nodiscard]] bool skipped() const noexcept {
    // Relaxed: a body that misses an abort that is happening runs as if it
    // had started just before; the abort's effects (futures failed, flag
    // read in wait()) do not depend on it.
    return aborted_.load(std::memory_order_relaxed);
  }
  void done() noexcept {
    // acq_rel: release pairs with the acquire load in wait_local(), so that
    // everything the task did happens before wait() returns; acquire is not
    // needed by anyone else but keeps the decrement an ordinary RMW.
    if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) engine_->wake_waiter();
  }
  void started() noexcept { outstanding_.fetch_add(1, std::memory_order_relaxed); }

  // A task of this rank threw: keep the first exception, abort everywhere.
  void fail_local(std::exception_ptr e) noexcept {
    {
      const std::lock_guard lock{error_mutex_};
      if (!local_error_) local_error_ = std::move(e);
    }
    abort(rank_, true);
  }

  // Skips every task that has not started, gives up the data requests, and
  // tells the other ranks if the failure is ours.
  void abort(int failed_rank, bool tell) noexcept {
    bool first = false;
    {
      const std::lock_guard lock{error_mutex_};
      if (failed_rank_ < 0) failed_rank_ = failed_rank;
      first = !abort_started_;
      abort_started_ = true;
    }
    // Relaxed: see skipped().
    aborted_.store(true, std::memory_order_relaxed);
    if (!first) return;
    if (tell) {
      abort_notice_ = rank_;
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        engine_->watch(
            [&](MPI_Request* req) {
              return MPI_Isend(&abort_notice_, 1, MPI_INT, r, control_tag, comm_, req);
            },
            [](void*, const MPI_Status&, const std::string&) {}, nullptr, false);
      }
    }
    const std::string why = failed_rank == rank_ ? "weft::mpi::flow: a task on this rank threw"
                                                 : "weft::mpi::flow: a task on rank " +
                                                       std::to_string(failed_rank) + " threw";
    engine_->give_up(why, false);
  }

  // wait(): the tasks emplaced here finished (their bodies returned).
  void wait_local() {
    // The engine's thread polls; done() wakes us when the count reaches 0.
    auto finished = [&] {
      // acquire: pairs with done()'s release.
      return outstanding_.load(std::memory_order_acquire) == 0;
    };
    while (!finished()) engine_->sleep_a_while(std::chrono::milliseconds(100), finished);
  }

  // wait(): agree on the outcome with the other ranks. Returns the error
  // to throw, if any.
  std::exception_ptr agree(std::uint64_t program_hash) {
    std::uint64_t mine[3] = {program_hash, ~program_hash,
                             aborted_.load(std::memory_order_relaxed) ? 1U : 0U};
    std::uint64_t all[3] = {0, 0, 0};
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = engine_->call(
        [&] { return MPI_Iallreduce(mine, all, 3, MPI_UINT64_T, MPI_MAX, comm_, &req); });
    if (rc != MPI_SUCCESS) {
      return std::make_exception_ptr(
          error("weft::mpi::flow::wait: MPI_Iallreduce failed: " + mpi_error_text(rc)));
    }
    auto delay = polling_.min_interval;
    for (;;) {
      int flag = 0;
      rc = engine_->call([&] { return MPI_Test(&req, &flag, MPI_STATUS_IGNORE); });
      if (rc != MPI_SUCCESS) {
        return std::make_exception_ptr(
            error("weft::mpi::flow::wait: MPI_Test failed: " + mpi_error_text(rc)));
      }
      if (flag != 0) break;
      // Control messages (another rank's abort) are seen meanwhile.
      engine_->poll(true);
      std::this_thread::sleep_for(delay);
      delay = doubled(delay, polling_.max_interval);
    }
    if (all[2] != 0) {
      aborted_.store(true, std::memory_order_relaxed);
      dead_ = true;
      const std::lock_guard lock{error_mutex_};
      if (local_error_) return local_error_;
      const std::string who =
          failed_rank_ >= 0 ? "rank " + std::to_string(failed_rank_) : "another rank";
      return std::make_exception_ptr(remote_error(
          "weft::mpi::flow::wait: a task on " + who +
              " threw, so the flow was aborted on every rank; that rank's wait() rethrows it",
          failed_rank_));
    }
    if (all[0] != ~all[1]) {
      dead_ = true;
      return std::make_exception_ptr(
          usage_error("weft::mpi::flow::wait: the ranks registered objects or emplaced tasks "
                      "differently; every "
                      "rank must run the same program of register_data, emplace and gather calls"));
    }
    return nullptr;
  }

  [[nodiscard]] bool dead() const noexcept { return dead_; }

  // The producer's bookkeeping (one thread: the one emplacing).
  flow_stats stats{};  // messages, bytes, tasks
  std::vector<object_record> objects;
  std::unordered_map<const void*, std::size_t> index;
  std::uint64_t hash = hash_start;
  bool emplaced_since_wait = false;

 private:
  static constexpr int control_tag = 0;

  void post_control_receive() {
    engine_->watch(
        [&](MPI_Request* req) {
          return MPI_Irecv(&control_in_, 1, MPI_INT, MPI_ANY_SOURCE, control_tag, comm_, req);
        },
        [](void* self, const MPI_Status&, const std::string& failure) {
          auto* s = static_cast<flow_state*>(self);
          // A failure here is the cancel at destruction: nothing to do.
          if (failure.empty()) s->abort(s->control_in_, false);
        },
        this, false);
  }

  std::shared_ptr<engine> engine_;
  progress_options polling_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int tag_ub_ = 32767;
  int control_in_ = -1;
  int abort_notice_ = -1;

  std::atomic<std::uint64_t> outstanding_{0};
  std::atomic<bool> aborted_{false};
  std::mutex error_mutex_;
  std::exception_ptr local_error_;
  int failed_rank_ = -1;
  bool abort_started_ = false;
  bool dead_ = false;
};

void engine::complete(entry& e, const MPI_Status& st, const std::string& failure) {
  if (e.job != nullptr) {
    request_job* j = std::exchange(e.job, nullptr);
    j->status = st;
    if (!e.internal) j->failure = failure;
    // Run here, not queued: the job only stores the status and sets the
    // future's latch, which queues what waits for it (an arrival task, a
    // continuation). Queuing it would cost a worker a turn first, and its
    // wake-up when idle, on the path from a message to the task that needs
    // it (deferred_job's own fallback when no queue can take a job).
    request_job::run_job(j);
  }
  if (e.callback != nullptr) e.callback(e.context, st, failure);
  if (!failure.empty() && e.aborts != nullptr) {
    flow_state* f = std::exchange(e.aborts, nullptr);
    f->fail_local(std::make_exception_ptr(error(failure)));
  }
}

bool task_skipped(flow_state* s) noexcept { return s->skipped(); }

// A transfer task's data address: a lazy object's view is asked on this
// rank's first transfer of it. False if the view failed: the flow is then
// aborted on every rank, as after a task's exception.
bool resolve_data(flow_state* s, lazy_data* lazy, std::size_t bytes, void*& data) noexcept {
  if (lazy == nullptr) return true;
  try {
    data = lazy->resolve(bytes);
    return true;
  } catch (...) {
    s->fail_local(std::current_exception());
    return false;
  }
}
void task_failed(flow_state* s, std::exception_ptr e) noexcept { s->fail_local(std::move(e)); }
void task_done(flow_state* s) noexcept { s->done(); }

}  // namespace detail

// ---------------------------------------------------------------------------
// progress

progress::progress(pool& p, progress_options options) {
  detail::check_mpi_ready("weft::mpi::progress");
  detail::check_pool(p, "weft::mpi::progress");
  engine_ = std::make_shared<detail::engine>(p, options);
}

progress::~progress() {
  engine_->give_up("weft::mpi::progress: the progress engine was destroyed", true);
}

future<MPI_Status> progress::after(MPI_Request& r) {
  if (r == MPI_REQUEST_NULL) {
    throw usage_error(
        "weft::mpi::progress::after: the request is MPI_REQUEST_NULL; pass the request an "
        "MPI_I* call started");
  }
  detail::engine::promise p = engine_->make_promise(nullptr);
  MPI_Request taken = std::exchange(r, MPI_REQUEST_NULL);
  engine_->arm(p.e, [&](MPI_Request* out) {
    *out = taken;
    return MPI_SUCCESS;
  });
  return std::move(p.f);
}

std::size_t progress::poll() { return engine_->poll(true); }
std::size_t progress::pending() const { return engine_->pending(); }
progress_stats progress::statistics() const { return engine_->statistics(); }

// ---------------------------------------------------------------------------
// flow

namespace {

// The local flow sees objects by address only: transfer tasks declare the
// object's address under this type and never look at it.
struct opaque {};

opaque& as_opaque(void* x) noexcept { return *static_cast<opaque*>(x); }

const char* const aborted_text =
    "weft::mpi::flow: the flow was aborted by an earlier error (wait() threw); it cannot be used "
    "any more: destroy it (on every rank) and make a new one";

}  // namespace

flow::flow(pool& p, MPI_Comm comm, flow_options options) : local_(p, options.local) {
  detail::check_mpi_ready("weft::mpi::flow");
  detail::check_pool(p, "weft::mpi::flow");
  state_ = std::make_unique<detail::flow_state>(p, comm, options);
}

flow::~flow() {
  detail::flow_state* s = state();
  if (!s->dead() && s->emplaced_since_wait) {
    try {
      wait();
    } catch (...) {
      detail::continuation_access::report_error(local_.owner(), std::current_exception());
    }
  }
  // What a dead flow left drains: its requests are given up first, so the
  // tasks after them can finish.
  s->eng().give_up("weft::mpi::flow: the flow was destroyed", true);
  try {
    local_.wait();
  } catch (...) {  // NOLINT(bugprone-empty-catch): already reported by wait() above
  }
  state_.reset();
}

int flow::rank() const noexcept { return state()->rank(); }
int flow::size() const noexcept { return state()->size(); }

void flow::add_object(const void* x, int owner, void* data, std::size_t size) {
  if (data == nullptr) {
    throw usage_error(
        "weft::mpi::flow::register_data: an object's data must be at a non-null address; "
        "register a view (register_data(x, owner, size, view)) for data allocated later");
  }
  add_record(x, owner, data, size, nullptr);
}

void flow::add_lazy_object(const void* x, int owner, std::size_t size,
                           std::function<std::span<std::byte>()> view,
                           std::function<void()> release) {
  auto lazy = std::make_unique<detail::lazy_data>();
  lazy->view = std::move(view);
  lazy->release = std::move(release);
  add_record(x, owner, nullptr, size, std::move(lazy));
}

void flow::add_record(const void* x, int owner, void* data, std::size_t size,
                      std::unique_ptr<detail::lazy_data> lazy) {
  detail::flow_state* s = state();
  if (s->dead()) throw usage_error(aborted_text);
  if (owner < 0 || owner >= s->size()) {
    throw usage_error("weft::mpi::flow::register_data: owner " + std::to_string(owner) +
                      " is not a rank of the flow's communicator (0 to " +
                      std::to_string(s->size() - 1) + ")");
  }
  if (s->index.count(x) != 0) {
    throw usage_error(
        "weft::mpi::flow::register_data: the object is registered already; register each object "
        "once");
  }
  if (size == 0 || size > static_cast<std::size_t>(INT_MAX)) {
    throw usage_error(
        "weft::mpi::flow::register_data: an object's data must be 1 to INT_MAX bytes; split "
        "larger objects");
  }
  if (s->objects.size() + 1 > static_cast<std::size_t>(s->tag_ub())) {
    throw usage_error("weft::mpi::flow::register_data: more objects than MPI tags (" +
                      std::to_string(s->tag_ub()) + "); use fewer, larger objects");
  }
  detail::object_record r{
      x,
      data,
      size,
      owner,
      static_cast<int>(s->objects.size()) + 1,
      0,
      std::vector<std::uint64_t>(static_cast<std::size_t>(s->size()), ~std::uint64_t{0}),
      std::move(lazy)};
  r.have[static_cast<std::size_t>(owner)] = 0;
  s->index.emplace(x, s->objects.size());
  s->objects.push_back(std::move(r));
  s->hash =
      detail::mix(detail::mix(detail::mix(s->hash, 3), static_cast<std::uint64_t>(owner)), size);
  s->emplaced_since_wait = true;
}

int flow::owner_of(const void* x) const {
  const detail::flow_state* s = state();
  const auto it = s->index.find(x);
  if (it == s->index.end()) {
    throw usage_error(
        "weft::mpi::flow: an object the program uses is not registered; call register_data(x, "
        "owner) for it on every rank first");
  }
  return s->objects[it->second].owner;
}

namespace {

std::size_t index_of(const detail::flow_state& s, const void* x) {
  const auto it = s.index.find(x);
  if (it == s.index.end()) {
    throw usage_error(
        "weft::mpi::flow: an object the program uses is not registered; call register_data(x, "
        "owner) for it on every rank first");
  }
  return it->second;
}

}  // namespace

// Every rank: rank `to` gets object i's current version. The owner emplaces
// a send (after the version's writer) and a task that holds a read of the
// object until the send completes, so that the next writer waits for it;
// `to` emplaces a receive into its instance (after its readers of the old
// version) and a task that holds a write until the data arrived, so that
// the readers of the new version wait for it.
void flow::transfer(std::size_t i, int to) {
  detail::flow_state* s = state();
  detail::object_record& o = s->objects[i];
  o.have[static_cast<std::size_t>(to)] = o.version;
  const int me = s->rank();
  if (me != o.owner && me != to) return;
  if (me == o.owner) {
    ++s->stats.messages_sent;
    s->stats.bytes_sent += o.bytes;
  } else {
    ++s->stats.messages_received;
    s->stats.bytes_received += o.bytes;
  }
  if (s->skipped()) return;
  detail::engine& eng = s->eng();
  detail::engine::promise p = eng.make_promise(s);
  // const_cast: the transfer tasks never touch the object itself; the
  // local flow only compares its address.
  opaque& x = as_opaque(const_cast<void*>(o.object));
  void* const data = o.data;
  detail::lazy_data* const lazy = o.lazy.get();
  const int count = static_cast<int>(o.bytes);
  const int tag = o.tag;
  MPI_Comm comm = s->comm();
  if (me == o.owner) {
    task_started();
    local_.emplace(
        [s, e = p.e, data, lazy, count, to, tag, comm](const opaque&) {
          const detail::task_guard guard{s};
          if (s->skipped()) return;
          void* from = data;
          if (!detail::resolve_data(s, lazy, static_cast<std::size_t>(count), from)) return;
          s->eng().arm(e, [&](MPI_Request* r) {
            return MPI_Isend(from, count, MPI_BYTE, to, tag, comm, r);
          });
        },
        weft::read(std::as_const(x)));
    task_started();
    local_.emplace([s](const opaque&) { s->done(); }, weft::read(std::as_const(x)),
                   weft::after(p.f));
  } else {
    p.e->expect_bytes = o.bytes;
    const int from = o.owner;
    auto receive = [s, e = p.e, data, lazy, count, from, tag, comm](opaque&) {
      const detail::task_guard guard{s};
      if (s->skipped()) return;
      void* into = data;
      if (!detail::resolve_data(s, lazy, static_cast<std::size_t>(count), into)) return;
      s->eng().arm(
          e, [&](MPI_Request* r) { return MPI_Irecv(into, count, MPI_BYTE, from, tag, comm, r); });
    };
    if (lazy != nullptr) {
      // A lazy copy is allocated only once its data are there to receive,
      // not when the receive could be posted (often long before the owner
      // has computed them): a task probes for the message unless this
      // rank's copy is allocated already, and the receive waits for the
      // probe.
      detail::engine::promise probe = eng.make_promise(s);
      task_started();
      local_.emplace(
          [s, e = probe.e, lazy, from, tag, comm](opaque&) {
            const detail::task_guard guard{s};
            if (s->skipped()) return;
            if (lazy->held()) {
              s->eng().settle(e);
            } else {
              s->eng().arm_probe(e, from, tag, comm);
            }
          },
          weft::write(x));
      task_started();
      local_.emplace(std::move(receive), weft::write(x), weft::after(probe.f));
    } else {
      task_started();
      local_.emplace(std::move(receive), weft::write(x));
    }
    task_started();
    local_.emplace([s](opaque&) { s->done(); }, weft::write(x), weft::after(p.f));
  }
}

bool flow::plan(const access_ref* accesses, std::size_t count) {
  detail::flow_state* s = state();
  if (s->dead()) throw usage_error(aborted_text);
  constexpr std::size_t most = 16;
  if (count > most) {
    throw usage_error("weft::mpi::flow::emplace: at most 16 accesses per task");
  }
  std::size_t idx[most];
  int exec = -1;
  for (std::size_t k = 0; k < count; ++k) {
    idx[k] = index_of(*s, accesses[k].object);
    if (!accesses[k].writes()) continue;
    const int owner = s->objects[idx[k]].owner;
    if (exec < 0) {
      exec = owner;
    } else if (owner != exec) {
      throw usage_error(
          "weft::mpi::flow::emplace: the task writes objects owned by ranks " +
          std::to_string(exec) + " and " + std::to_string(owner) +
          "; a task runs on the owner of what it writes, so split it into one task per owner");
    }
  }
  if (exec < 0) exec = s->objects[idx[0]].owner;
  std::uint64_t h = detail::mix(detail::mix(s->hash, 1), static_cast<std::uint64_t>(exec));
  for (std::size_t k = 0; k < count; ++k)
    h = detail::mix(h, idx[k] * 8 + static_cast<std::uint64_t>(accesses[k].mode));
  s->hash = h;
  s->emplaced_since_wait = true;
  for (std::size_t k = 0; k < count; ++k) {
    detail::object_record& o = s->objects[idx[k]];
    if (!accesses[k].writes() && o.owner != exec &&
        o.have[static_cast<std::size_t>(exec)] != o.version) {
      transfer(idx[k], exec);
    }
  }
  for (std::size_t k = 0; k < count; ++k) {
    if (!accesses[k].writes()) continue;
    detail::object_record& o = s->objects[idx[k]];
    // Once per object, even if declared twice.
    if (o.have[static_cast<std::size_t>(o.owner)] == o.version + 1) continue;
    ++o.version;
    o.have[static_cast<std::size_t>(o.owner)] = o.version;
  }
  return exec == s->rank() && !s->skipped();
}

void flow::task_started() {
  detail::flow_state* s = state();
  s->started();
  ++s->stats.local_tasks;
}

void flow::gather_object(const void* x, int root) {
  detail::flow_state* s = state();
  if (s->dead()) throw usage_error(aborted_text);
  if (root < 0 || root >= s->size()) {
    throw usage_error("weft::mpi::flow::gather: root " + std::to_string(root) +
                      " is not a rank of the flow's communicator");
  }
  const std::size_t i = index_of(*s, x);
  s->hash = detail::mix(detail::mix(detail::mix(s->hash, 2), static_cast<std::uint64_t>(root)), i);
  s->emplaced_since_wait = true;
  const detail::object_record& o = s->objects[i];
  if (o.owner != root && o.have[static_cast<std::size_t>(root)] != o.version) transfer(i, root);
}

// Every rank forgets that the non-owners hold x's current version, so the
// next read there is a transfer again; a rank that holds a copy with a
// release frees it in a task that writes x, which the local flow orders
// after the copy's readers and before the next receive.
void flow::drop_object(const void* x) {
  detail::flow_state* s = state();
  if (s->dead()) throw usage_error(aborted_text);
  const std::size_t i = index_of(*s, x);
  s->hash = detail::mix(detail::mix(s->hash, 4), i);
  s->emplaced_since_wait = true;
  detail::object_record& o = s->objects[i];
  const auto me = static_cast<std::size_t>(s->rank());
  const bool held_here = static_cast<int>(me) != o.owner && o.have[me] != ~std::uint64_t{0};
  for (std::size_t r = 0; r < o.have.size(); ++r) {
    if (static_cast<int>(r) != o.owner) o.have[r] = ~std::uint64_t{0};
  }
  if (!held_here || !o.lazy || !o.lazy->release || s->skipped()) return;
  detail::lazy_data* const lazy = o.lazy.get();
  task_started();
  local_.emplace(
      [s, lazy](opaque&) {
        const detail::task_guard guard{s};
        if (s->skipped()) return;
        try {
          lazy->drop();
        } catch (...) {
          s->fail_local(std::current_exception());
        }
      },
      weft::write(as_opaque(const_cast<void*>(o.object))));
}

void flow::wait() {
  detail::flow_state* s = state();
  if (s->dead()) throw usage_error(aborted_text);
  s->wait_local();
  try {
    local_.wait();
  } catch (...) {
    // Not a task's exception (the wrappers keep those): the local flow
    // itself failed. The other ranks must hear of it.
    s->fail_local(std::current_exception());
  }
  const std::exception_ptr e = s->agree(s->hash);
  s->hash = detail::hash_start;
  s->emplaced_since_wait = false;
  if (e) std::rethrow_exception(e);
}

flow_stats flow::statistics() const {
  flow_stats st = state()->stats;
  st.polling = state()->eng().statistics();
  return st;
}

}  // namespace weft::mpi
