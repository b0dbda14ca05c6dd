#include "weft/detail/core/finish_signal.hpp"

namespace weft::detail {

bool finish_signal::park_until(std::uint64_t seen, std::chrono::microseconds timeout) {
  std::unique_lock lock{mutex_};
  // seq_cst: the waiter's half of signal()'s Dekker pair (its load of
  // parked_ after its increment of epoch_).
  parked_.fetch_add(1, std::memory_order_seq_cst);
  const bool finished = cv_.wait_for(lock, timeout, [&] {
    // seq_cst: as in epoch().
    return epoch_.load(std::memory_order_seq_cst) != seen;
  });
  parked_.fetch_sub(1, std::memory_order_relaxed);
  return finished;
}

}  // namespace weft::detail
