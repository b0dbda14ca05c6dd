// How much an idle worker takes per look, and how it paces its looks: the
// tuned constants of the search (src/core/dispatch.cpp), which the pool's
// constructor also reads to size each worker's batch buffer.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft::detail::search {

// Jobs a worker moves from the injector to its own deque per lock taken.
inline constexpr std::size_t injector_batch = 127;
// Jobs a worker takes from a lane per CAS (at most half the lane), and twice
// as many from a lane that holds more than twice lane_backlog.
inline constexpr std::size_t lane_batch = 32;
inline constexpr std::size_t largest_lane_batch = 2 * lane_batch;
// Jobs left in a lane after a worker took a full batch from it beyond which
// the worker takes the fast way to keep its batch (pool::keep_batch()).
inline constexpr std::int64_t lane_backlog = 32 * static_cast<std::int64_t>(lane_batch);
// The longest pause between two looks of an idle worker at a lane that is
// still filling up (about 5 us at 20 ns a pause).
inline constexpr int max_pauses_while_filling = 256;
// An idle worker's search yields its CPU every this many looks (about 1 us).
inline constexpr unsigned yield_every_polls = 16;
// The most jobs a worker holds in its batch buffer at once.
inline constexpr std::size_t largest_batch =
    injector_batch + 1 > largest_lane_batch ? injector_batch + 1 : largest_lane_batch;

}  // namespace weft::detail::search
