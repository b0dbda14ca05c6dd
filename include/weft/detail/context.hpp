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

  work_deque<job*> deque;   // owner pushes and pops, any thread steals
  job_cache cache;          // owner allocates, any thread frees
  std::vector<job*> batch;  // owner only: scratch for injector batches
  const std::size_t index;  // position in the pool
  std::uint64_t rng;        // owner only: victim selection
  std::thread thread;       // written by the pool's constructor, joined by its destructor
};

struct context {
  pool* owner = nullptr;   // the pool this thread works for, if any
  worker* self = nullptr;  // this thread's worker slot (null in sequential mode)
  std::size_t depth = 0;   // help_until frames active on this stack
};

// Constant-initialised, so access needs no TLS guard call.
inline constinit thread_local context tls{};

}  // namespace weft::detail
