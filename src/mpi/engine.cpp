// weft::mpi's progress engine: a request's completion, and the public
// progress object (requests as futures). The engine itself is in
// src/mpi/engine.hpp.
#include "engine.hpp"

#include <string>
#include <utility>

#include "flow_state.hpp"
#include "weft/mpi.hpp"

namespace weft::mpi {
namespace detail {

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

}  // namespace weft::mpi
