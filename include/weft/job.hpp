// Where a job stands (priority), what a full pool does with a new one
// (overflow), and weft::job, the handle an overflow callable receives.
#pragma once

#include <cstdint>

namespace weft {

class pool;
namespace detail {
struct job;
}  // namespace detail

/// Where a job queued with pool::spawn(priority, f) or submit(priority, f)
/// stands when a worker chooses its next job (docs/control.md, "Priorities").
enum class priority : std::uint8_t { low, normal, high };

/// What spawn/submit do, on a thread that is not running one of the pool's
/// jobs, when the pool's bounded submission is full (pool_options::capacity).
enum class overflow : std::uint8_t {
  block,     ///< wait until a queued job starts and leaves room
  reject,    ///< throw weft::queue_full; nothing is queued
  run_here,  ///< run the job on the submitting thread, now; one for a chosen
             ///< worker (spawn_on, submit_on) waits for room instead, as with block
};

/// A job that found no room in a full pool, handed to the overflow callable
/// (pool_options::on_full): run it, keep it to run later, or drop it. It is
/// counted as the pool's work until then: pool::wait() and the pool's
/// destructor wait for it, so run or drop it before either (docs/control.md,
/// "Bounded submission").
class job {
 public:
  /// An empty job.
  job() noexcept = default;
  /// Takes other's job; other is empty afterwards.
  job(job&& other) noexcept;
  /// Drops the job this one holds (see reset()), then takes other's.
  job& operator=(job&& other) noexcept;
  job(const job&) = delete;
  job& operator=(const job&) = delete;
  /// Drops the job if it still holds one (see reset()).
  ~job();

  /// Runs the job on the calling thread, now, as a worker would have: a
  /// future gets its result, a detached job's exception goes to the pool's
  /// error path. The job is empty afterwards. Throws usage_error if empty.
  void run();
  /// Drops the job without running it: its future throws job_cancelled, a
  /// detached job is counted in pool_stats::cancelled, a task_group's job
  /// cancels the group. Does nothing if empty.
  void reset() noexcept;
  /// Whether it still holds a job.
  explicit operator bool() const noexcept { return job_ != nullptr; }

 private:
  friend class pool;
  job(pool* owner, detail::job* j) noexcept : pool_(owner), job_(j) {}
  pool* pool_ = nullptr;
  detail::job* job_ = nullptr;
};

}  // namespace weft
