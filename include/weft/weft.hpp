// weft: one work-stealing scheduler for futures, fork-join, task graphs,
// data-flow tasks and timers. Including this header brings in the whole public API.
#pragma once

#include "algorithm.hpp"    // IWYU pragma: export
#include "errors.hpp"       // IWYU pragma: export
#include "flow.hpp"         // IWYU pragma: export
#include "future.hpp"       // IWYU pragma: export
#include "graph.hpp"        // IWYU pragma: export
#include "group.hpp"        // IWYU pragma: export
#include "join.hpp"         // IWYU pragma: export
#include "pool.hpp"         // IWYU pragma: export
#include "this_worker.hpp"  // IWYU pragma: export
#include "timer.hpp"        // IWYU pragma: export
