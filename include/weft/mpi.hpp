// weft::mpi: MPI requests as dependencies, and data-flow tasks across MPI
// ranks (an optional component: CMake option WEFT_WITH_MPI, target
// weft::mpi). Every rank runs the same sequential program of tasks; a task
// runs on the rank that owns the object it writes, and the objects it reads
// from other ranks arrive by non-blocking messages the flow infers. No
// worker ever waits in MPI_Wait: a progress engine's thread polls the
// pending requests (MPI_Testsome), and sleeps while none is pending.
// docs/mpi.md has the ownership model, the transfers, the progress engine
// and its cost, and the error protocol.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "errors.hpp"
#include "flow.hpp"
#include "future.hpp"
#include "pool.hpp"

namespace weft::mpi {

/// An MPI call or request failed (its error string is in what()), or a
/// request was cancelled because the flow or progress engine it belonged to
/// stopped.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What wait() throws on the ranks whose own tasks did not fail when a task
/// on another rank threw: the distributed flow was aborted everywhere.
class remote_error : public error {
 public:
  /// `rank`: the rank whose task threw first as far as this rank knows, or
  /// -1 if its message had not arrived yet.
  remote_error(const std::string& what, int rank) : error(what), rank_(rank) {}
  /// The rank whose task threw, or -1 if unknown here.
  [[nodiscard]] int rank() const noexcept { return rank_; }

 private:
  int rank_;
};

/// How often the progress engine polls while requests are pending. Any
/// length up to microseconds::max() is fine: the doubling and the rests
/// saturate (weft/detail/clock.hpp), and a rest too long to represent lasts
/// until the engine is kicked (a new request, a worker that runs out of
/// work).
struct progress_options {
  /// The first poll after a request starts or completes comes this soon;
  /// each poll that finds nothing doubles the delay up to max_interval.
  std::chrono::microseconds min_interval{20};
  /// The longest delay between two polls while requests are pending and a
  /// worker of the pool is idle.
  std::chrono::microseconds max_interval{200};
  /// The delay between two polls while requests are pending and every
  /// worker is busy: a completed request could only wait for a worker
  /// meanwhile. A worker that runs out of work starts a poll at once. A
  /// value below max_interval counts as max_interval.
  std::chrono::microseconds busy_interval{1000};
};

/// Counters of a progress engine (progress::statistics, flow::statistics).
struct progress_stats {
  std::uint64_t polls = 0;      ///< MPI_Testsome calls made
  std::uint64_t completed = 0;  ///< requests seen complete
};

namespace detail {

class engine;
struct entry;

// The part of a distributed flow that tasks reach (src/mpi/flow_state.hpp).
class flow_state;
// Where a lazily registered object's data are (src/mpi/flow_state.hpp).
struct lazy_data;

}  // namespace detail

/// Turns MPI requests into weft futures. Completion is found by polling
/// (MPI_Testsome over every pending request, rate-limited by
/// progress_options) from the engine's own thread, which sleeps while no
/// request is pending; no thread blocks in MPI_Wait. MPI must be
/// initialised with at least MPI_THREAD_SERIALIZED (every MPI call weft
/// makes holds one lock), and MPI_THREAD_MULTIPLE if the program makes MPI
/// calls of its own from several threads. Destroy it before the pool and
/// before MPI_Finalize.
class progress {
 public:
  /// Completed requests release their futures' waiters onto p. Throws weft::usage_error if MPI is
  /// not initialised or not at MPI_THREAD_SERIALIZED or above, or if p is in sequential mode (no
  /// worker to run what completed requests release).
  explicit progress(pool& p, progress_options options = {});
  /// Cancels the requests still pending (their futures then hold
  /// weft::mpi::error) and stops polling.
  ~progress();
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;

  /// Takes an active request (r is set to MPI_REQUEST_NULL) and returns a
  /// future of its status, ready when the request completes; it holds
  /// weft::mpi::error if the request failed or was cancelled. A null
  /// request is usage_error.
  [[nodiscard]] future<MPI_Status> after(MPI_Request& r);
  /// Polls once from the calling thread; returns how many requests completed.
  std::size_t poll();
  /// Requests not complete yet.
  [[nodiscard]] std::size_t pending() const;
  /// How many polls and completions so far.
  [[nodiscard]] progress_stats statistics() const;

 private:
  std::shared_ptr<detail::engine> engine_;
};

/// progress::after(r): a future of r's status, ready when r completes.
[[nodiscard]] inline future<MPI_Status> after(progress& p, MPI_Request& r) { return p.after(r); }

/// Options of a distributed flow.
struct flow_options {
  weft::flow_options local{};  ///< the options of each rank's local flow
  progress_options polling{};  ///< how the flow's progress engine polls
};

/// What a distributed flow sent and received on this rank so far.
struct flow_stats {
  std::uint64_t messages_sent = 0;      ///< object versions sent
  std::uint64_t messages_received = 0;  ///< object versions received
  std::uint64_t bytes_sent = 0;         ///< their bytes
  std::uint64_t bytes_received = 0;     ///< their bytes
  std::uint64_t local_tasks = 0;        ///< tasks emplaced here (transfers included)
  progress_stats polling{};             ///< the progress engine's counters
};

/// A sequential task flow across the ranks of a communicator. Every rank
/// registers the same objects in the same order and emplaces the same tasks
/// in the same order (the flow checks a hash of that program at wait()).
/// A task runs on the rank that owns the objects it writes (they must share
/// one owner), or, if it writes none, on the owner of the first object it
/// reads. Before it runs, every object it reads from another rank is sent to
/// its rank, once per version: received copies stay cached in that rank's
/// instance of the object until the owner writes the object again. Tasks
/// declare objects with any mode of the single-rank flow (read, write,
/// commute, concurrent, reduce): every mode but read counts as a write of
/// x, places the task on x's owner and keeps its meaning there (a commute
/// or reduce run is a run of the owner's local flow); after() does not
/// cross ranks.
///
/// Objects are sent as bytes: a trivially copyable object (register_data(x,
/// owner)), or a (pointer, size) view of its storage (register_data(x,
/// owner, data, size)), the same size on every rank, or a view that a rank
/// asks for only when it first sends or receives the object
/// (register_data(x, owner, size, view)). Every rank holds an instance of
/// every object, where received versions land; with a view, a rank need not
/// allocate the data of the objects it never reads, and with a view and a
/// release, drop_copies(x) frees a received copy after its last reader.
class flow {
 public:
  /// A flow over the ranks of comm (duplicated: the flow's messages never
  /// meet the program's), running each rank's tasks on p. Collective.
  /// Throws weft::usage_error if MPI is not initialised at
  /// MPI_THREAD_SERIALIZED or above, or if p is in sequential mode.
  flow(pool& p, MPI_Comm comm, flow_options options = {});
  /// Waits as wait() does if tasks were emplaced since the last wait (an
  /// exception then goes to the pool's error path), then frees the
  /// duplicated communicator. Collective.
  ~flow();
  flow(const flow&) = delete;
  flow& operator=(const flow&) = delete;

  /// This rank in the flow's communicator.
  [[nodiscard]] int rank() const noexcept;
  /// The number of ranks.
  [[nodiscard]] int size() const noexcept;

  /// Declares x, owned by `owner`, sent as its own bytes (T trivially
  /// copyable). Every rank calls it, in the same order.
  template <class T>
  void register_data(T& x, int owner) {
    static_assert(std::is_trivially_copyable_v<T>,
                  "weft::mpi::flow::register_data(x, owner): x is sent as its bytes, so T must be "
                  "trivially copyable; for an object whose data lives elsewhere, pass a view: "
                  "register_data(x, owner, pointer, size)");
    add_object(&x, owner, &x, sizeof(T));
  }
  /// Declares x, owned by `owner`, whose data are the `size` bytes at
  /// `data` (the same size on every rank; a received version overwrites
  /// them). Every rank calls it, in the same order.
  template <class T>
  void register_data(T& x, int owner, void* data, std::size_t size) {
    add_object(&x, owner, data, size);
  }
  /// Declares x, owned by `owner`, whose data are `size` bytes (the same
  /// on every rank) that view(x) shows as a std::span<std::byte>. A rank
  /// calls view(x) only when it first sends or receives x, on a worker,
  /// inside the transfer task (which has x to itself on a receiving rank):
  /// there it may allocate x's storage, so that a rank that never reads x
  /// never holds its data. It is called at most once per rank; the span
  /// must stay valid for the flow's lifetime. A span of another size is a
  /// usage_error that aborts the flow on every rank (wait() throws it).
  /// Every rank calls register_data, in the same order.
  template <class T, class View>
  requires std::is_invocable_r_v<std::span<std::byte>, View&, T&> void register_data(
      T& x, int owner, std::size_t size, View view) {
    add_lazy_object(&x, owner, size,
                    [&x, v = std::move(view)]() mutable -> std::span<std::byte> { return v(x); },
                    {});
  }
  /// As register_data(x, owner, size, view), and release(x) frees what the
  /// view allocated once this rank's copy of x is dropped (drop_copies):
  /// called on a worker, in a task that has x to itself, after the tasks
  /// that read the copy. The next transfer of x to this rank asks view(x)
  /// again. Never called on the owner, whose instance is the object.
  template <class T, class View, class Release>
  requires(std::is_invocable_r_v<std::span<std::byte>, View&, T&>&&
               std::is_invocable_v<Release&, T&>) void register_data(T& x, int owner,
                                                                     std::size_t size, View view,
                                                                     Release release) {
    add_lazy_object(
        &x, owner, size,
        [&x, v = std::move(view)]() mutable -> std::span<std::byte> { return v(x); },
        [&x, r = std::move(release)]() mutable { r(x); });
  }
  /// The rank that owns x (usage_error if x is not registered).
  [[nodiscard]] int owner_of(const void* x) const;

  /// Adds a task that calls f with the declared objects, in declaration
  /// order (`const T&` for read, `T&` for write), on the rank the flow
  /// assigns it; every rank calls emplace with the same program.
  template <class F, class... A>
  void emplace(F&& f, A&&... accesses);

  /// Brings x's latest version to `root`'s instance of x by the time wait()
  /// returns. Every rank calls it.
  template <class T>
  void gather(T& x, int root) {
    gather_object(&x, root);
  }

  /// Drops the copies of x that ranks other than its owner hold (as
  /// StarPU-MPI's cache flush does): on each such rank, after the tasks
  /// emplaced so far that read x there, the release given to register_data
  /// (if any) frees the copy's data, and the next task there that reads x
  /// receives it anew. Every rank calls it at the same point of the
  /// program, typically after x's last read on other ranks, so that a rank
  /// holds the data it owns and only the copies it still needs. The owner's
  /// instance is untouched; so is a gathered copy's value unless a release
  /// frees it.
  template <class T>
  void drop_copies(T& x) {
    drop_object(&x);
  }

  /// Returns on every rank once every rank's tasks emplaced so far have
  /// finished and their messages completed (collective). Rethrows this
  /// rank's first task exception; on the other ranks throws remote_error;
  /// after either, the flow is aborted and only its destructor may be used.
  /// Throws usage_error if the ranks emplaced different programs.
  void wait();

  /// Messages, bytes and polls on this rank so far.
  [[nodiscard]] flow_stats statistics() const;

 private:
  // One declared access, as the planner sees it: every mode but read
  // changes the object, and places the task on its owner.
  struct access_ref {
    const void* object;
    access_mode mode;
    [[nodiscard]] bool writes() const noexcept { return mode != access_mode::read; }
  };

  void add_object(const void* x, int owner, void* data, std::size_t size);
  void add_lazy_object(const void* x, int owner, std::size_t size,
                       std::function<std::span<std::byte>()> view, std::function<void()> release);
  // Both: the checks and the record.
  void add_record(const void* x, int owner, void* data, std::size_t size,
                  std::unique_ptr<detail::lazy_data> lazy);
  void gather_object(const void* x, int root);
  void drop_object(const void* x);
  // Every rank's bookkeeping of sending object i's current version to `to`.
  void transfer(std::size_t i, int to);
  // Bookkeeping of a task on every rank (versions, transfers, the program
  // hash); true if the task runs here.
  bool plan(const access_ref* accesses, std::size_t count);
  // Counts a task emplaced here; its wrapper calls task_done().
  void task_started();
  [[nodiscard]] detail::flow_state* state() const noexcept { return state_.get(); }

  weft::flow local_;
  std::unique_ptr<detail::flow_state> state_;
};

namespace detail {

// What the task wrappers need of the flow's state (src/mpi/flow.cpp).
bool task_skipped(flow_state* s) noexcept;
void task_failed(flow_state* s, std::exception_ptr e) noexcept;
void task_done(flow_state* s) noexcept;

// Counts a task's body done however it ends.
struct task_guard {
  flow_state* s;
  explicit task_guard(flow_state* state) noexcept : s(state) {}
  task_guard(const task_guard&) = delete;
  task_guard& operator=(const task_guard&) = delete;
  ~task_guard() { task_done(s); }
};

// Every declaration of an object crosses ranks; after() does not (a future
// or task handle is one rank's).
template <class A>
struct is_mpi_access : std::false_type {};
template <class T, access_mode M>
struct is_mpi_access<access<T, M>> : std::true_type {};
template <class T, class Op>
struct is_mpi_access<reduce_access<T, Op>> : std::true_type {};

}  // namespace detail

template <class F, class... A>
void flow::emplace(F&& f, A&&... accesses) {
  static_assert(
      sizeof...(A) > 0,
      "weft::mpi::flow::emplace(f, accesses...): declare at least one object (weft::read, "
      "write, commute, concurrent or reduce); the rank a task runs on is the owner of what "
      "it writes");
  static_assert((detail::is_mpi_access<std::decay_t<A>>::value && ...),
                "weft::mpi::flow::emplace: declare objects only (weft::read, write, commute, "
                "concurrent, reduce); weft::after(future or task) names one rank's future or task "
                "and does not cross ranks");
  static_assert(std::is_invocable_v<std::decay_t<F>&, typename std::decay_t<A>::object_type&...>,
                "weft::mpi::flow::emplace(f, accesses...): f must be callable with the declared "
                "objects in order: const T& for read(x), T& for the other modes");
  const access_ref refs[] = {access_ref{accesses.object, std::decay_t<A>::mode}...};
  if (!plan(refs, sizeof...(A))) return;
  task_started();
  detail::flow_state* s = state();
  // The wrapper never lets an exception reach the local flow: the flow
  // would skip the tasks after it, whose bodies then never count themselves
  // done. It records the exception instead, which aborts the flow on every
  // rank, and the bodies that start afterwards return at once.
  local_.emplace(
      [s, fn = std::forward<F>(f)](auto&... objects) mutable {
        const detail::task_guard guard{s};
        if (detail::task_skipped(s)) return;
        try {
          std::invoke(fn, objects...);
        } catch (...) {
          detail::task_failed(s, std::current_exception());
        }
      },
      std::forward<A>(accesses)...);
}

}  // namespace weft::mpi
