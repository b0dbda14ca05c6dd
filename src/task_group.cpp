// task_group's out-of-line members: the finish of a job off the home
// worker, the general wait and its nap, the error path (weft/group.hpp).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <utility>

#include "weft/detail/backoff.hpp"
#include "weft/detail/fault.hpp"
#include "weft/detail/latch.hpp"
#include "weft/detail/scheduler.hpp"
#include "weft/errors.hpp"
#include "weft/group.hpp"

namespace weft {

void task_group::finish_before_destruction() noexcept {
  try {
    wait_until_idle();
  } catch (const usage_error& e) {
    // Destroyed by one of its own jobs: the wait could never end, and a
    // destructor cannot throw.
    std::fprintf(stderr, "weft: ~task_group: %s\n", e.what());
    std::abort();
  }
  // No error without a cancel: fail() sets cancelled_ before it stores the
  // error, and wait_until_idle() saw every job's finish (acquire), so a relaxed
  // load that reads false proves error_ is empty and spares a fork-join
  // node's group the mutex (wait() relies on the same).
  if (!cancelled_.load(std::memory_order_relaxed)) return;
  std::lock_guard lock{mutex_};
  if (error_) detail::scheduler::report_error(pool_, std::move(error_));
}

void task_group::fail(std::exception_ptr error) noexcept {
  cancel();
  std::lock_guard lock{mutex_};
  if (!error_) error_ = std::move(error);
}

bool task_group::count_off(std::uint64_t& s, bool locked, detail::parker*& napper) noexcept {
  std::uint64_t next = 0;
  do {
    next = s - one_job;
    if ((next & count_mask) == 0 && (s & waiter_bit) != 0) {
      if (!locked) [[unlikely]]
        return false;
      // The last job takes the blocked threads (finish_last_with_waiters()).
      next &= ~waiter_bit;
    }
    // Any job clears the napper bit, and wakes the napper to look again.
    next &= ~napper_bit;
    // Relaxed: see the acquire load in finish_shared().
    napper = (s & napper_bit) != 0 ? napper_.load(std::memory_order_relaxed) : nullptr;
    // acq_rel: release publishes this job's writes to whoever sees the count
    // reach zero (idle(), or a blocked waiter's look under the lock);
    // acquire pairs with announce_nap()'s release RMW, as the load in
    // finish_shared() does, and with the other jobs' release, so the
    // threads finish_last_with_waiters() unparks see every job's writes.
  } while (
      !state_.compare_exchange_weak(s, next, std::memory_order_acq_rel, std::memory_order_acquire));
  return true;
}

void task_group::finish_shared() noexcept {
  // Acquire (on failure too): pairs with announce_nap()'s release RMW, so a
  // napper_ read after seeing napper_bit is the napper's.
  std::uint64_t s = state_.load(std::memory_order_acquire);
  detail::parker* napper = nullptr;
  if (!count_off(s, false, napper)) [[unlikely]] {
    finish_last_with_waiters();
    return;
  }
  // After the CAS nothing of the group is read: the napper may see the group
  // idle and destroy it at once. Its parker lives as long as the pool.
  if (napper != nullptr) napper->unpark();
}

void task_group::finish_last_with_waiters() noexcept {
  blocked_waiter* woken = nullptr;
  detail::parker* napper = nullptr;
  {
    // Taken before our decrement (the group is alive: we are not counted
    // finished yet) and held until we have the list, so no thread blocks,
    // and no other job takes the list, in between. The list's threads keep
    // the group alive until we unpark them, after the unlock.
    const std::lock_guard lock{mutex_};
    // Acquire: as in finish_shared().
    std::uint64_t s = state_.load(std::memory_order_acquire);
    (void)count_off(s, true, napper);
    // A job spawned meanwhile leaves the waiters to the new last job.
    const bool last = ((s - one_job) & count_mask) == 0;
    if ((s & waiter_bit) != 0 && last) woken = std::exchange(waiters_, nullptr);
  }
  if (napper != nullptr) napper->unpark();
  while (woken != nullptr) {
    // Read first: the waiter may return, and its node go, once unparked.
    blocked_waiter* const following = woken->next;
    woken->parker->unpark();
    woken = following;
  }
}

bool task_group::announce_nap(detail::parker& nap) noexcept {
  // Relaxed: published by the release RMW below.
  napper_.store(&nap, std::memory_order_relaxed);
  // Release pairs with finish_shared()'s acquire loads. As read-modify-writes
  // of one word, this and a job's CAS come in one order: either the job sees
  // the bit and unparks us, or this sees its decrement and idle() below
  // (which reads state_ after it) counts the job finished.
  state_.fetch_or(napper_bit, std::memory_order_release);
  if (!idle()) return true;
  // Relaxed: the bit only ever wakes a napper; an unpark that comes anyway
  // leaves a permit, which costs the worker's next nap one more look.
  state_.fetch_and(~napper_bit, std::memory_order_relaxed);
  return false;
}

void task_group::wait_idle() {
  // Only on this path, which every wait takes unless it found the group idle
  // at home: walking the thread's running jobs costs a load per frame.
  if (!idle() && detail::running_scope::inside(this)) {
    throw usage_error(
        "weft::task_group::wait: called from one of the group's own jobs, which it would wait "
        "for: it could never return; wait for the group outside its jobs (a job may make and "
        "wait for a group of its own)");
  }
  auto done = [this] { return idle(); };
  // A worker with nothing to run naps until one of the group's jobs
  // finishes elsewhere, rather than sleep out the backoff's pauses
  // (docs/waiting.md, "A worker's wait that finds nothing to run").
  // Only a worker of the group's own pool naps: its parker outlives every
  // job that may unpark it, since the pool waits for its jobs.
  auto nap = [this](std::chrono::microseconds d) {
    detail::worker* self = detail::tls.owner == &pool_ ? detail::tls.self : nullptr;
    if (self == nullptr) {
      detail::plain_sleep{}(d);
      return;
    }
    detail::fault::before_nap();
    if (announce_nap(self->nap)) {
      self->nap.park_for(d);
      // Relaxed: see announce_nap().
      state_.fetch_and(~napper_bit, std::memory_order_relaxed);
    }
  };
  if (home_ != nullptr) {
    // The home's wait() has already run what it could from its own deque
    // (wait_at_home()); the general wait below runs the rest. The home's own
    // finishes are plain stores that no waiter's bit can be paired with, so
    // a thread that is not a worker polls, with backoff, in the rare case
    // that it waits for a group a worker made.
    detail::scheduler::wait_for(
        pool_, done,
        [&] {
          detail::backoff backoff;
          while (!done()) backoff.pause();
        },
        nap);
    // Idle: every slot's job has finished, and only the home reuses them.
    if (detail::tls.self == home_) slots_used_ = 0;
    return;
  }
  detail::scheduler::wait_for(
      pool_, done,
      [&] {
        blocked_waiter me{&detail::parker::current(), nullptr};
        {
          // Under the lock, so that the job that brings the count to zero
          // (which takes it to take the list) finds us listed or we find
          // the count at zero (docs/waiting.md, "Several threads waiting on
          // one group").
          const std::lock_guard lock{mutex_};
          // Acquire: if the count is already zero we return at once, and must
          // see the jobs' writes (pairs with the acq_rel CAS in
          // finish_shared()).
          std::uint64_t s = state_.load(std::memory_order_acquire);
          do {
            if ((s & count_mask) == 0) return;
            // Acquire (on failure too): as the load above. The bit needs no
            // release: the list it announces is read under the lock.
          } while (!state_.compare_exchange_weak(s, s | waiter_bit, std::memory_order_acquire,
                                                 std::memory_order_acquire));
          me.next = waiters_;
          waiters_ = &me;
        }
        // The last job takes the list and unparks each thread in it exactly
        // once. Returning any earlier could free the group while that job
        // still reads our node.
        me.parker->park();
      },
      nap);
}

group_status task_group::take_error() {
  std::exception_ptr error;
  {
    std::lock_guard lock{mutex_};
    error = std::exchange(error_, nullptr);
  }
  // One of several waiters takes the cancel: the others may find the group
  // fresh already, and return complete.
  const bool was_cancelled = cancelled_.exchange(false, std::memory_order_relaxed);
  if (error) std::rethrow_exception(error);
  return was_cancelled ? group_status::cancelled : group_status::complete;
}

}  // namespace weft
