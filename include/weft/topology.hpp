// weft's view of the machine: the CPUs this process may use, one per core,
// and how many threads it may run (src/topology.cpp).
#pragma once

#include <cstddef>
#include <vector>

namespace weft {

/// How many threads this process may run at once: the CPUs in its affinity
/// mask, further limited by a cgroup CPU quota (v2 cpu.max, or v1
/// cpu.cfs_quota_us / cpu.cfs_period_us) on its cgroup or an ancestor,
/// rounded up; at least 1 (docs/control.md, "Pinning workers to CPUs").
/// On Windows, the process's affinity mask and a job object's hard CPU rate
/// cap; elsewhere (docs/platforms.md) std::thread::hardware_concurrency().
std::size_t available_parallelism();

/// The CPUs this process may run on, ascending: its affinity mask (the main
/// thread's, as taskset and cpusets set it; the process's on Windows, CPUs
/// of its processor group). pool_options::cpus must be among them
/// (docs/control.md, "Pinning workers to CPUs").
std::vector<int> allowed_cpus();

/// The first allowed CPU of each physical core, ascending: allowed_cpus()
/// without the other hardware threads (SMT siblings) of a core, as Linux's
/// sysfs topology groups them (GetLogicalProcessorInformation on Windows);
/// allowed_cpus() itself where the topology cannot be read. For pool_options{.cpus =
/// weft::cpus_one_per_core()}.
std::vector<int> cpus_one_per_core();

}  // namespace weft
