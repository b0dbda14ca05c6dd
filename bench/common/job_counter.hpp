// The body of every "empty" job, and how the benchmarks verify that all of
// them ran.
//
// count_job() adds one to a counter owned by the calling thread: a relaxed
// load and store on the thread's own cache line, no read-modify-write, so
// the verification costs every library the same few nanoseconds and
// creates no contention. It lives in a .cpp so that no compiler can prove a
// job empty and drop it.
//
// job_tally_now() sums all counters. Read it only after a wait that makes
// every counted job happen-before the caller (pool.wait(), task_group::wait,
// taskwait, a joined thread); before and after a batch, the difference of
// the totals is the number of jobs that ran, and the difference of
// `on_this_thread` is how many of them the caller ran itself.
#pragma once

#include <cstdint>

namespace bench {

void count_job() noexcept;

struct job_tally {
  std::uint64_t total = 0;           // jobs counted by all threads, ever
  std::uint64_t on_this_thread = 0;  // of which the calling thread ran
};

job_tally job_tally_now();

}  // namespace bench
