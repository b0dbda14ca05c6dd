// A part of the pool's core (docs/design.md, "The core's parts"): bounded
// submission (pool_options::capacity and on_full, docs/control.md). A job
// submitted from outside the pool's own jobs takes a slot while it waits in
// a queue and gives it back as it starts (or is dropped); with no slot free,
// the overflow policy decides. Both halves of the slot's Dekker pair, a
// blocked submitter's and release()'s, are here.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>

#include "../../job.hpp"
#include "../../pool_options.hpp"
#include "../config.hpp"
#include "counters.hpp"

namespace weft::detail {

class bound {
 public:
  bound(std::size_t capacity, overflow_policy on_full) noexcept
      : capacity_(capacity), on_full_(std::move(on_full)) {}
  bound(const bound&) = delete;
  bound& operator=(const bound&) = delete;

  // Whether submissions are bounded at all (capacity != 0). Read on every
  // submission from outside the pool: a word written only by the
  // constructor.
  [[nodiscard]] bool limited() const noexcept { return capacity_ != 0; }

  // What admit() tells the submitter to do with its job.
  enum class admission : std::uint8_t {
    slot,      // queue it: it holds a slot (job_flags::throttled)
    run_here,  // overflow::run_here: run it on the submitting thread
    hand_over  // a callable policy: give it to hand_over()
  };
  // Takes a slot, or applies the policy when there is none: blocks until
  // one is free, throws queue_full (overflow::reject; the message names
  // pool `name`), or says what to do instead. A job for one worker
  // (`for_one_worker`: spawn_on, submit_on) is never run here nor handed
  // over: it waits for room. Counts an overflow once per call in `c`.
  admission admit(bool for_one_worker, counters& c, const std::string& name);
  // A job that held a slot has started, or was dropped (any thread).
  void release() noexcept;
  // The callable policy's call, on the submitting thread.
  void hand_over(weft::job j) const { on_full_.handler_(std::move(j)); }

 private:
  const std::size_t capacity_;
  const overflow_policy on_full_;
  // The slots held by jobs not yet started, and the submitters blocked in
  // admit() waiting for one (on room_cv_).
  alignas(cache_line) std::atomic<std::size_t> queued_{0};
  std::atomic<std::size_t> blocked_{0};
  std::mutex room_mutex_;
  std::condition_variable room_cv_;
};

}  // namespace weft::detail
