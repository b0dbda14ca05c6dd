#include "weft/detail/sleep.hpp"

#include <algorithm>

namespace weft::detail {

void sleep_controller::cancel() noexcept {
  std::uint64_t s = state_.load(std::memory_order_relaxed);
  std::uint64_t next = 0;
  do {
    const std::uint64_t left = sleepers(s) - 1;
    const std::uint64_t toks = std::min(tokens(s), left);
    next =
        (s & ~(field_mask | (field_mask << field_bits))) + one_searcher + left + toks * one_token;
    // Relaxed: cancelling publishes nothing; the worker goes on to look at
    // queues it has just seen non-empty.
  } while (!state_.compare_exchange_weak(s, next, std::memory_order_relaxed));
}

bool sleep_controller::park(bool (*own)(const void*) noexcept, const void* ctx) {
  std::unique_lock lock{mutex_};
  for (;;) {
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    while (tokens(s) > 0) {
      // Acquire pairs with the release CAS in wake_one() and wake_all(): what
      // the granter did before (resume()'s RMW of the attention word) is
      // visible. The no-lost-wake-up argument does not need it: the
      // producer's job itself is published by the deque, lane or injector,
      // which the woken worker reads with its own acquire operations.
      if (state_.compare_exchange_weak(s, s - one_token - one_sleeper + one_searcher,
                                       std::memory_order_acquire, std::memory_order_relaxed)) {
        return true;
      }
    }
    if (stopping_) {
      state_.fetch_sub(one_sleeper, std::memory_order_relaxed);
      return false;
    }
    // Checked under the lock, which wake_sleepers() takes after the
    // producer's store: either we see the work here, or we are waiting when
    // it notifies.
    if (own != nullptr && own(ctx)) {
      cancel();  // sleeping -> searching, without a token
      return true;
    }
    cv_.wait(lock);
  }
}

void sleep_controller::wake_one(std::uint64_t s) noexcept {
  while (wants_a_worker(s)) {
    // Release pairs with the acquire CAS in park().
    if (state_.compare_exchange_weak(s, s + one_token, std::memory_order_release,
                                     std::memory_order_relaxed)) {
      // Taking the lock orders this grant against a sleeper that checked for
      // tokens under the lock and is about to wait: it either saw the token
      // or is already waiting and gets the notification.
      { std::lock_guard lock{mutex_}; }
      cv_.notify_one();
      return;
    }
  }
}

void sleep_controller::wake_all() noexcept {
  // seq_cst: as in new_work(), with resume()'s seq_cst RMW of the attention
  // word (detail::attention) as the store: a Dekker pair with a sleeper's
  // prepare() and its seq_cst load of that word in pool::search::work_for().
  std::uint64_t s = state_.load(std::memory_order_seq_cst);
  // Release pairs with the acquire CAS in park(), as in wake_one().
  while (sleepers(s) > tokens(s) &&
         !state_.compare_exchange_weak(s, s + (sleepers(s) - tokens(s)) * one_token,
                                       std::memory_order_release, std::memory_order_relaxed)) {
  }
  if (sleepers(s) == 0) return;
  // Notified even when every sleeper already had a token: a worker that
  // announced its sleep later may take one, and the sleeper it was for
  // then wakes only through its `own` check (park()).
  { std::lock_guard lock{mutex_}; }
  cv_.notify_all();
}

void sleep_controller::wake_sleepers() noexcept {
  // seq_cst: as in new_work(), with the caller's seq_cst store (a mailbox's
  // size, shrink()'s target_) as the store. A worker that announces its
  // sleep after this load sees the work in its re-check.
  if (sleepers(state_.load(std::memory_order_seq_cst)) == 0) return;
  { std::lock_guard lock{mutex_}; }
  cv_.notify_all();
}

void sleep_controller::stop() {
  {
    std::lock_guard lock{mutex_};
    stopping_ = true;
  }
  cv_.notify_all();
}

void sleep_controller::add_listener(idle_listener& l) {
  const std::lock_guard lock{mutex_};
  listeners_.push_back(&l);
  // Relaxed: see notify_listeners().
  listener_count_.store(listeners_.size(), std::memory_order_relaxed);
}

void sleep_controller::remove_listener(idle_listener& l) noexcept {
  const std::lock_guard lock{mutex_};
  std::erase(listeners_, &l);
  // Relaxed: see notify_listeners(). A worker that read the old count takes
  // the lock and finds l gone.
  listener_count_.store(listeners_.size(), std::memory_order_relaxed);
}

void sleep_controller::notify_listeners_locked() noexcept {
  const std::lock_guard lock{mutex_};
  for (idle_listener* l : listeners_) l->notify(l->context);
}

}  // namespace weft::detail
