#include "weft/detail/core/bound.hpp"

#include "weft/errors.hpp"

namespace weft::detail {

bound::admission bound::admit(bool for_one_worker, counters& c, const std::string& name) {
  // A job for one worker (spawn_on, submit_on) runs on that worker only:
  // run_here would run it on this thread, and a callable could only run it
  // here or keep it to run on some other thread later. So it waits for
  // room as with block; reject still throws, which runs it nowhere.
  const bool waits = on_full_.handler_ == nullptr
                         ? on_full_.kind_ == overflow::block ||
                               (for_one_worker && on_full_.kind_ == overflow::run_here)
                         : for_one_worker;
  std::size_t n = queued_.load(std::memory_order_relaxed);
  bool counted = false;
  for (;;) {
    while (n < capacity_) {
      // Relaxed: a slot is a count; the queue publishes the job.
      if (queued_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) {
        return admission::slot;
      }
    }
    // Once per submission, however long it blocks.
    if (!std::exchange(counted, true)) c.add_overflowed();
    if (waits) {
      std::unique_lock lock{room_mutex_};
      // seq_cst: a Dekker pair with release(): either it sees us blocked
      // and notifies, or our check below sees its decrement.
      blocked_.fetch_add(1, std::memory_order_seq_cst);
      room_cv_.wait(lock, [&] { return queued_.load(std::memory_order_seq_cst) < capacity_; });
      blocked_.fetch_sub(1, std::memory_order_relaxed);
      n = queued_.load(std::memory_order_relaxed);
      continue;
    }
    if (on_full_.handler_ != nullptr) return admission::hand_over;
    if (on_full_.kind_ == overflow::run_here) return admission::run_here;
    throw queue_full("weft: pool '" + name + "' already holds " + std::to_string(capacity_) +
                     " submitted jobs not yet started (pool_options::capacity) and its policy is "
                     "overflow::reject; retry later, or choose block or run_here");
  }
}

void bound::release() noexcept {
  // seq_cst: admit()'s Dekker pair (our decrement, then our load of
  // blocked_; its increment of blocked_, then its load of queued_).
  queued_.fetch_sub(1, std::memory_order_seq_cst);
  if (blocked_.load(std::memory_order_seq_cst) == 0) return;
  // Under the lock: orders us against a submitter between its check and
  // its wait.
  { std::lock_guard lock{room_mutex_}; }
  room_cv_.notify_one();
}

}  // namespace weft::detail
