// Private to src/mpi/: the distributed flow's state on each rank (the
// registered objects, the program hash, the abort protocol), shared by
// src/mpi/flow.cpp, src/mpi/transfer.cpp and the engine's completions.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine.hpp"
#include "weft/mpi.hpp"

namespace weft::mpi {

// What every call on a flow that an earlier error aborted throws.
inline const char* const aborted_text =
    "weft::mpi::flow: the flow was aborted by an earlier error (wait() threw); it cannot be used "
    "any more: destroy it (on every rank) and make a new one";

namespace detail {

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
inline std::uint64_t mix(std::uint64_t h, std::uint64_t v) noexcept {
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

}  // namespace detail
}  // namespace weft::mpi
