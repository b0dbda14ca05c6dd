#include "weft/detail/core/attention.hpp"

namespace weft::detail {

void attention::make_mailboxes(std::size_t slots) {
  constexpr std::size_t mailbox_capacity = 16;
  mailboxes_.reserve(slots);
  for (std::size_t i = 0; i < slots; ++i) {
    mailboxes_.push_back(std::make_unique<injector>(mailbox_capacity));
  }
}

bool attention::pause() {
  std::lock_guard lock{mutex_};
  if (paused()) return false;
  // Relaxed: see the declaration.
  word_.fetch_add(paused_weight, std::memory_order_relaxed);
  return true;
}

bool attention::resume(sleep_controller& sleep) {
  std::lock_guard lock{mutex_};
  if (!paused()) return false;
  // seq_cst: a Dekker pair with paused(seq_cst) in a worker's last look
  // before it sleeps (pool::search::work_for()): either it sees the pool resumed,
  // or wake_all() sees it asleep.
  word_.fetch_sub(paused_weight, std::memory_order_seq_cst);
  sleep.wake_all();
  return true;
}

void attention::begin_purge() {
  // acq_rel RMW: the other side of purge_seen()'s: a job a worker puts back
  // after taking it just as the pool was paused (and the rest of its batch)
  // is either seen by the purge or dropped by that worker. Under the lock,
  // so that last_purge_ only grows when two threads purge at once. Relaxed
  // on the clock: it orders nothing, it only stamps.
  std::lock_guard lock{mutex_};
  const std::uint32_t now = purge_clock.fetch_add(1, std::memory_order_relaxed) + 1;
  last_purge_.exchange(now == 0 ? 1 : now, std::memory_order_acq_rel);
}

}  // namespace weft::detail
