// weft: one work-stealing scheduler for futures, fork-join, task graphs,
// data-flow tasks and timers. Including this header brings in the whole public API.
#pragma once

/// \namespace weft
/// weft's public API: pools, futures, fork-join, task groups, task graphs,
/// data-flow tasks and parallel algorithms, all on one work-stealing
/// scheduler. Names in weft::detail are internal.

/// \mainpage weft API reference
/// The public headers' documentation: start at weft::pool, weft::future,
/// weft::join, weft::task_group, weft::graph, weft::flow, weft::collect,
/// weft::submit_scoped and the algorithms in namespace weft. README.md has
/// the overview and examples; the design notes in docs/ are under "Related
/// Pages".

#include "algorithm.hpp"     // IWYU pragma: export
#include "collect.hpp"       // IWYU pragma: export
#include "coro.hpp"          // IWYU pragma: export
#include "errors.hpp"        // IWYU pragma: export
#include "flow.hpp"          // IWYU pragma: export
#include "flow_options.hpp"  // IWYU pragma: export
#include "future.hpp"        // IWYU pragma: export
#include "graph.hpp"         // IWYU pragma: export
#include "group.hpp"         // IWYU pragma: export
#include "job.hpp"           // IWYU pragma: export
#include "join.hpp"          // IWYU pragma: export
#include "pool.hpp"          // IWYU pragma: export
#include "pool_options.hpp"  // IWYU pragma: export
#include "scope.hpp"         // IWYU pragma: export
#include "stats.hpp"         // IWYU pragma: export
#include "this_worker.hpp"   // IWYU pragma: export
#include "timer.hpp"         // IWYU pragma: export
#include "topology.hpp"      // IWYU pragma: export
