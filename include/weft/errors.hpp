// The exceptions weft throws for misuse; each message says what to do instead.
#pragma once

#include <stdexcept>

namespace weft {

/// Thrown by spawn/submit (and everything built on them) when the pool's
/// destruction has begun and the caller is not one of the pool's own jobs.
class pool_closed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A call that can never succeed where it is made: waiting for a pool from one
/// of its own jobs, get() on an empty future, and the like.
class usage_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// What a future's get() throws, and what a task_group's wait() rethrows,
/// when the job was dropped before it started: by pool::purge(), or by an
/// overflow callable that let its weft::job go without running it
/// (docs/control.md, "Pause, resume and purge").
class job_cancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Thrown by spawn/submit from a thread that is not one of the pool's jobs
/// when the pool's bounded submission is full and its policy is
/// overflow::reject; nothing was queued (docs/control.md, "Bounded
/// submission").
class queue_full : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace weft
