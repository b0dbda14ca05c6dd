// Process-wide measurements (per-thread CPU clocks, getrusage) and small statistics.
#pragma once

#include <chrono>
#include <string_view>
#include <vector>

namespace bench {

// User + system CPU time consumed so far by every thread of this process,
// including threads that have already exited.
std::chrono::nanoseconds process_cpu_time();

// The same sum without the calling thread's own clock: what the process's
// other threads (a library's workers) used, unaffected by the caller's own
// work, including reading the clocks.
std::chrono::nanoseconds other_threads_cpu_time();

// Peak resident set size of this process so far, in MiB (ru_maxrss).
double peak_rss_mib();

// Milliseconds as a double, for counters.
double to_ms(std::chrono::nanoseconds d) noexcept;

// The median of `samples` (the mean of the two middle ones for an even
// count); reorders `samples`. Zero for an empty vector.
double median(std::vector<double>& samples);

// A peak-RSS measurement is only meaningful for the first workload a process
// runs: ru_maxrss never goes down. Returns true if `benchmark_name` is the
// only one that has claimed this process so far (repetitions of the same
// benchmark are fine: they reach the same peak).
bool claim_process_for_peak_rss(std::string_view benchmark_name);

}  // namespace bench
