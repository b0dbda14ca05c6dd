// Which worker is running the calling code.
#pragma once

#include <cstddef>
#include <optional>

#include "detail/context.hpp"

/// Which worker is running the calling code.
namespace weft::this_worker {

/// Inside a job of pool p, an index below p.slots(), for per-worker state:
/// - on a worker, its index in the pool (0 .. p.size()-1; a job that was
///   already running on a worker that pool::resize() is taking away keeps
///   that worker's index until it returns);
/// - on a thread that is not a worker and runs p's jobs while it waits
///   (wait_until, or any wait with pool_options::waiters_help),
///   p.max_size(): the pool's one helper slot, held by one such thread at a
///   time;
/// - in a sequential pool's job, 0 (p.slots() is 1); such a pool runs its
///   jobs on the threads that wait on it, so per-worker state is shared if
///   several threads wait on one sequential pool at once.
/// In pool_options::on_worker_start and on_worker_stop, the worker's index
/// (the hooks are not jobs: docs/control.md, "Worker hooks").
///
/// Outside any job (and on a thread that only waits), empty.
inline std::optional<std::size_t> index() noexcept {
  const detail::context& ctx = detail::tls;
  if (ctx.self != nullptr) return ctx.self->index;
  if (ctx.helper_index != detail::no_helper_index) return ctx.helper_index;
  if (ctx.owner != nullptr) return 0;
  return std::nullopt;
}

}  // namespace weft::this_worker
