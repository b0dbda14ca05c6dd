// weft::job: the handle an overflow callable (pool_options::on_full,
// docs/control.md) receives for a job that found the pool full; it runs
// the job, or drops it as pool::purge() would.
#include <utility>

#include "weft/pool.hpp"

namespace weft {

// ---------------------------------------------------------------------------
// weft::job

job::job(job&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)), job_(std::exchange(other.job_, nullptr)) {}

job& job::operator=(job&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::exchange(other.pool_, nullptr);
    job_ = std::exchange(other.job_, nullptr);
  }
  return *this;
}

job::~job() { reset(); }

void job::run() {
  if (job_ == nullptr) {
    throw usage_error(
        "weft::job::run: the job is empty (default-constructed, moved from, already run or "
        "reset); run the weft::job the overflow callable received, once");
  }
  detail::job* j = std::exchange(job_, nullptr);
  std::exchange(pool_, nullptr)->execute(j);
}

void job::reset() noexcept {
  if (job_ == nullptr) return;
  pool* const owner = std::exchange(pool_, nullptr);
  detail::job* j = std::exchange(job_, nullptr);
  if ((j->flags & detail::job_flags::cancellable) != 0) {
    pool::posting::cancel_job(j);
  } else {
    // A kind that must run (a front end's inner job): it runs here.
    owner->execute(j);
  }
}
}  // namespace weft
