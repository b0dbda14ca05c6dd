// A part of the pool's core (docs/design.md, "The core's parts"): the
// threads that run the pool's jobs without being its workers (docs/waiting.md,
// "Outside waits"). Any number of them visit (a wait that helps, a thread
// that runs its own lane's job), and the destructor waits until none is
// left; one at a time holds the helper slot, whose index is max_size() in
// this_worker::index(). Both halves of each pair are here: a visitor's
// leave() against the destructor's anyone_inside(), and the slot's release
// against the next holder's take.
#pragma once

#include <atomic>
#include <cstddef>

namespace weft::detail {

class guests {
 public:
  guests() = default;
  guests(const guests&) = delete;
  guests& operator=(const guests&) = delete;

  // A thread that is not a worker starts running the pool's jobs. Relaxed:
  // entering only has to precede the finish counts of the jobs it runs,
  // which it does in program order (the destructor reads those counts,
  // then anyone_inside()).
  void enter() noexcept { visitors_.fetch_add(1, std::memory_order_relaxed); }
  // Its last touch of the pool. Release pairs with the acquire load in
  // anyone_inside(): everything the visitor did happens before the
  // destructor frees the pool.
  void leave() noexcept { visitors_.fetch_sub(1, std::memory_order_release); }
  // The destructor, once every job has finished: whether a visitor has yet
  // to leave. Acquire: see leave().
  [[nodiscard]] bool anyone_inside() const noexcept {
    return visitors_.load(std::memory_order_acquire) != 0;
  }

  // Takes the helper slot; false if another thread holds it. Acquire pairs
  // with the release in free_helper_slot(): the previous holder's use of
  // per-worker state indexed by the slot happens before ours.
  bool take_helper_slot() noexcept {
    return !helper_busy_.exchange(true, std::memory_order_acquire);
  }
  // Release: see take_helper_slot().
  void free_helper_slot() noexcept { helper_busy_.store(false, std::memory_order_release); }

 private:
  std::atomic<std::size_t> visitors_{0};
  std::atomic<bool> helper_busy_{false};
};

}  // namespace weft::detail
