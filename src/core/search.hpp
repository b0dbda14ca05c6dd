// A worker's search for work (src/core/dispatch.cpp) and its last look before
// it sleeps (src/core/control.cpp for the looks at pause, priorities and
// mailboxes): where it takes jobs from besides its own deque, how much it
// takes per look and how it paces its looks, and whether it may sleep. The
// tuned constants are also read by the pool's constructor, to size each
// worker's batch buffer. Private to the core's sources.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "weft/pool.hpp"

namespace weft::detail::search_tuning {

// Jobs a worker moves from the injector to its own deque per lock taken.
inline constexpr std::size_t injector_batch = 127;
// Jobs a worker takes from a lane per CAS (at most half the lane), and twice
// as many from a lane that holds more than twice lane_backlog.
inline constexpr std::size_t lane_batch = 32;
inline constexpr std::size_t largest_lane_batch = 2 * lane_batch;
// Jobs left in a lane after a worker took a full batch from it beyond which
// the worker takes the fast way to keep its batch (pool::search::keep_batch()).
inline constexpr std::int64_t lane_backlog = 32 * static_cast<std::int64_t>(lane_batch);
// The longest pause between two looks of an idle worker at a lane that is
// still filling up (about 5 us at 20 ns a pause).
inline constexpr int max_pauses_while_filling = 256;
// An idle worker's search yields its CPU every this many looks (about 1 us).
inline constexpr unsigned yield_every_polls = 16;
// The most jobs a worker holds in its batch buffer at once.
inline constexpr std::size_t largest_batch =
    injector_batch + 1 > largest_lane_batch ? injector_batch + 1 : largest_lane_batch;

}  // namespace weft::detail::search_tuning

namespace weft {

struct pool::search {
  // Idle search and sleep: whether worker w may find a job now (not paused,
  // and some queue it takes from is non-empty). seq_cst loads throughout:
  // the recheck after sleep_controller::prepare() (docs/sleep.md).
  [[nodiscard]] static bool work_for(const pool& p, const detail::worker& w) noexcept;
  // The cheap look of an idle worker's search loop: `full` also looks at
  // the workers' deques.
  [[nodiscard]] static bool worth_a_look(const pool& p, const detail::worker& w,
                                         bool full) noexcept {
    if (p.attention_.wanted()) [[unlikely]]
      return special_worth_a_look(p, w, full);
    return full ? !p.all_queues_empty() : !p.outside_queues_empty();
  }
  [[nodiscard]] static bool special_worth_a_look(const pool& p, const detail::worker& w,
                                                 bool full) noexcept;
  // What worker w may do besides taking from the plain queues (the question
  // work_for(), special_worth_a_look() and mail_for() share): `leave` the
  // pool (resize()); nothing while `paused`; a job in its mailbox or, with
  // `priorities`, a priority queue (`special_job`); or `none` of these.
  enum class outlook : std::uint8_t { none, leave, paused, special_job };
  [[nodiscard]] static outlook outlook_for(const pool& p, const detail::worker& w, bool priorities,
                                           std::memory_order order) noexcept;
  // The `own` check of a parked worker (sleep_controller::park): whether its
  // mailbox has a job it may start.
  struct mail_check {
    const pool* owner;
    const detail::worker* worker;
  };
  static bool mail_for(const void* ctx) noexcept;
  // A job from a lane (with a batch of more for self's deque), or from
  // another worker's deque.
  static detail::job* take_from_lanes(pool& p, detail::worker* self);
  static detail::job* steal_from_workers(pool& p, detail::worker* self);
  // Owner only: moves self.batch into self's deque, for others to steal.
  // far_behind: the batch came from a lane whose producer is far ahead of
  // the workers.
  static void keep_batch(pool& p, detail::worker& self, bool far_behind);
  // Idle search: whether the only work is in lanes still being filled.
  static bool lanes_filling(const pool& p, std::int64_t& last_pushed) noexcept;
};

}  // namespace weft
