// What the current thread is to weft: a worker of some pool, a thread running
// a sequential pool's jobs, or nobody in particular.
#pragma once

#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "config.hpp"
#include "deque.hpp"
#include "job.hpp"

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
    if (remote_head == nullptr) remote_tail = j;
    j->next = remote_head;
    remote_head = j;
    if (++remote_count == remote_batch) flush_remote();
  }

  // Owner only. The chained jobs have finished: count them too.
  void flush_remote() noexcept {
    if (remote_head == nullptr) return;
    remote_home->release_remote(remote_head, remote_tail);
    // seq_cst: pairs with pool::quiescent()'s loads and, through the pool's
    // idle_waiters_ check after flushing, with a blocked waiter (docs/waiting.md).
    remote_home->finished.fetch_add(remote_count, std::memory_order_seq_cst);
    remote_head = remote_tail = nullptr;
    remote_count = 0;
  }

  static constexpr std::size_t remote_batch = 64;

  work_deque<job*> deque;    // owner pushes and pops, any thread steals
  job_cache cache;           // owner allocates, any thread frees
  std::vector<job*> batch;   // owner only: scratch for injector batches
  const std::size_t index;   // position in the pool
  std::uint64_t rng;         // owner only: victim selection
  std::size_t finished = 0;  // owner only: own jobs finished, not yet added to cache.finished
  // Owner only: jobs of remote_home waiting for flush_remote() to hand them back.
  job_cache* remote_home = nullptr;
  heap_job* remote_head = nullptr;
  heap_job* remote_tail = nullptr;
  std::size_t remote_count = 0;
  std::thread thread;  // written by the pool's constructor, joined by its destructor
};

struct context {
  pool* owner = nullptr;   // the pool this thread works for, if any
  worker* self = nullptr;  // this thread's worker slot (null in sequential mode)
  std::size_t depth = 0;   // help_until frames active on this stack
};

// Constant-initialised, so access needs no TLS guard call.
inline constinit thread_local context tls{};

}  // namespace weft::detail
