// What the current thread is to weft: a worker of some pool, a thread running
// a sequential pool's jobs, or nobody in particular.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "config.hpp"
#include "deque.hpp"
#include "job.hpp"
#include "latch.hpp"

namespace weft {
class pool;
}

namespace weft::detail {

// One per worker thread; allocated by the pool and never moved.
struct alignas(cache_line) worker {
  explicit worker(std::size_t i) : index(i), rng(0x9E3779B97F4A7C15ULL * (i + 1)) {}

  // Owner only: frees (and counts finished) a job that belongs to another
  // thread's cache. Frees to
  // the same cache are chained and handed over with one CAS per
  // remote_batch jobs (or at flush_remote()), instead of one CAS per job.
  void free_remote(heap_job* j) noexcept {
    if (j->home != remote_home) {
      flush_remote();
      remote_home = j->home;
    }
    ++remote_finished[j->epoch];
    if (remote_head == nullptr) remote_tail = j;
    // The home's allocator takes the chain from the head: the job chained
    // remote_ahead frees before this one comes remote_ahead places after it.
    heap_job*& slot = remote_recent[remote_count % remote_ahead];
    j->set_links(remote_head, remote_count >= remote_ahead ? slot : nullptr);
    slot = j;
    remote_head = j;
    if (++remote_count == remote_batch) flush_remote();
  }

  // Owner only. The chained jobs have finished: count them too.
  void flush_remote() noexcept {
    if (remote_head == nullptr) return;
    remote_home->release_remote(remote_head, remote_tail);
    for (unsigned p = 0; p < 2; ++p) {
      if (remote_finished[p] == 0) continue;
      // seq_cst: pairs with pool::counting::quiescent()'s loads and, through the
      // pool's idle_waiters::wake() after flushing, with a blocked waiter
      // (docs/waiting.md).
      remote_home->finished[p].fetch_add(std::exchange(remote_finished[p], 0),
                                         std::memory_order_seq_cst);
    }
    remote_head = remote_tail = nullptr;
    remote_count = 0;
  }

  static constexpr std::size_t remote_batch = 64;
  static constexpr std::size_t remote_ahead = 8;

  work_deque<job*> deque;  // owner pushes and pops, any thread steals
  job_cache cache;         // owner allocates, any thread frees
  // Owner only: scratch for injector and lane batches, with room reserved
  // for the largest batch, so that taking one never allocates.
  std::vector<job*> batch;
  const std::size_t index;  // position in the pool
  std::uint64_t rng;        // owner only: victim selection
  // Owner only: own jobs finished, per epoch parity, not yet added to
  // cache.finished.
  std::uint64_t finished[2] = {0, 0};
  // Owner only: jobs of remote_home waiting for flush_remote() to hand them
  // back, and how many of them per epoch parity.
  job_cache* remote_home = nullptr;
  heap_job* remote_head = nullptr;
  heap_job* remote_tail = nullptr;
  std::size_t remote_count = 0;
  std::uint64_t remote_finished[2] = {0, 0};
  // Owner only: the last remote_ahead jobs chained, by remote_count modulo.
  heap_job* remote_recent[remote_ahead] = {};
  std::uint32_t jobs_since_flush = 0;  // owner only: see pool::counting::flush_now_and_then()
  std::uint32_t picks = 0;             // owner only: pool::find_special()'s turn

  // pool::stats(): written by the owner only, read by anyone. One writer, so
  // a relaxed load and store (plain moves on x86) count without a locked
  // instruction; a reader sees some recent value.
  struct counters {
    std::atomic<std::uint64_t> jobs{0};            // jobs taken from a queue and run
    std::atomic<std::uint64_t> steals{0};          // jobs taken from another worker's deque
    std::atomic<std::uint64_t> steal_attempts{0};  // other workers' deques looked into
    std::atomic<std::uint64_t> parks{0};           // went to sleep
    std::atomic<std::uint64_t> wakeups{0};         // woken for work
    std::atomic<std::uint64_t> idle_ns{0};         // time in pool::idle(): searching or asleep
    // When the current idle period began (steady_clock ns + 1; 0: busy).
    std::atomic<std::uint64_t> idle_since{0};
  } counts;
  static void bump(std::atomic<std::uint64_t>& c, std::uint64_t by = 1) noexcept {
    c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
  std::thread thread;  // written by the pool's constructor, joined by its destructor
  // Owner only: since it was last idle it ran a join half another thread
  // forked, or its own half went to another thread (detail::search_limit()).
  // After `thread`, in what was padding: the fields above keep their offsets.
  bool forked_with_others = false;
  // Where the worker naps in a wait whose end another thread announces
  // (a join's stolen half: stealable_half::announce_nap()), instead of
  // sleeping out its backoff's pauses. Last, for the same reason.
  parker nap;
};

class running_scope;

// The index this_worker::index() reports for a thread that is not a worker
// while it runs jobs as the pool's helper (pool::waits::helper_scope).
inline constexpr std::size_t no_helper_index = static_cast<std::size_t>(-1);

struct context {
  pool* owner = nullptr;   // the pool this thread works for, if any
  worker* self = nullptr;  // this thread's worker slot (null in sequential mode)
  std::size_t depth = 0;   // help_until frames active on this stack
  // The innermost job this thread is running (helping waits nest them).
  const running_scope* running = nullptr;
  // The pool whose helper slot this thread holds (pool::waits::helper_scope), and
  // the index its jobs see: that pool's size(). In a worker hook (outside
  // any job, helping nobody) the worker's index (call_worker_hook()).
  pool* helping = nullptr;
  std::size_t helper_index = no_helper_index;
  // The pool this thread stands in for a worker of (pool::waits::stand_in_scope).
  pool* standing_in = nullptr;
};

// Constant-initialised, so access needs no TLS guard call.
inline constinit thread_local context tls{};

// Marks the calling thread as running a job of pool `p` with epoch parity
// `epoch` for its lifetime. The scopes of the jobs a helping wait
// interrupted stay linked below it: a job spawned into a pool inherits the
// parity of the innermost running job of that pool (docs/waiting.md,
// "Waiting for what came before").
class running_scope {
 public:
  // `work`: what the job belongs to, when its front end must recognise it
  // on the stack later (a graph's tasks: graph_core::inside_own_task()).
  running_scope(const pool* p, unsigned epoch, const void* work = nullptr) noexcept
      : pool_(p), epoch_(epoch), work_(work), outer_(tls.running) {
    tls.running = this;
  }
  running_scope(const running_scope&) = delete;
  running_scope& operator=(const running_scope&) = delete;
  ~running_scope() { tls.running = outer_; }

  [[nodiscard]] const pool* owner() const noexcept { return pool_; }
  [[nodiscard]] unsigned epoch() const noexcept { return epoch_; }

  // The parity of the innermost job of p this thread runs; false if none.
  static bool find(const pool* p, unsigned& epoch) noexcept { return find(tls.running, p, epoch); }
  // The same, among `innermost` and the scopes below it (another thread's,
  // which must stay alive meanwhile: a joiner's, while its half runs).
  static bool find(const running_scope* innermost, const pool* p, unsigned& epoch) noexcept {
    for (const running_scope* s = innermost; s != nullptr; s = s->outer_) {
      if (s->pool_ == p) {
        epoch = s->epoch_;
        return true;
      }
    }
    return false;
  }
  // Whether the calling thread runs a job of `work` (maybe beneath others).
  static bool inside(const void* work) noexcept {
    for (const running_scope* s = tls.running; s != nullptr; s = s->outer_) {
      if (s->work_ == work) return true;
    }
    return false;
  }

 private:
  const pool* pool_;
  unsigned epoch_;
  const void* work_;
  const running_scope* outer_;
};

}  // namespace weft::detail
