// Sleep and wake-up of idle workers: the whole protocol lives here and in
// docs/sleep.md, which argues why no wake-up is lost.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "config.hpp"

namespace weft::detail {

// A front end that wants to hear when a worker of a pool runs out of work
// (scheduler::add_idle_listener): weft::mpi's poller, which polls rarely
// while every worker is busy and at once when one is not.
struct idle_listener {
  // Called on the worker, at the start of its idle search, under the sleep
  // controller's lock: must be short and must not block.
  void (*notify)(void* context) noexcept = nullptr;
  void* context = nullptr;
};

// How many workers of a pool of `workers` may search at once, as seen by one
// that just ran out of work (pool::idle(), the limit of
// sleep_controller::try_start_searching()). Half the pool, at least one, so
// that spinning leaves a CPU to an outside producer or a busy worker; but
// every worker for one that took part in a fork-join since it was last idle
// (`forked_with_others`: it ran a join half another thread forked, or its own
// half went to another thread). Such work comes back within microseconds (the
// next call of a parallel loop, the next level of a recursion), and the
// worker it would find asleep costs a futex wake-up at the next fork, here
// 20 to 130 us: a parallel loop of 10^5 doubles called over and over took
// 53-67 against 31 us a call (docs/sleep.md, "Spinning and idle cost").
constexpr std::uint64_t search_limit(std::size_t workers, bool forked_with_others) noexcept {
  if (forked_with_others) return workers;
  return workers / 2 > 1 ? workers / 2 : 1;
}

// An idle worker is first *searching* (spinning over the queues), then
// *sleeping* (announced, re-checking, or parked). The state word counts
// searchers, sleepers, and wake tokens (wake-ups granted to sleepers and not
// yet consumed). A producer calls new_work() after every push: it costs one
// load, and wakes a sleeper only when nobody is searching (a searcher will
// find the job) and some sleeper has no token yet, so one push wakes at most
// one worker.
class sleep_controller {
 public:
  // Worker: starts searching unless `limit` workers already are; returns
  // whether it did. Capping the searchers keeps idle spinning from taking
  // the CPUs that producers and busy workers need (with 2 workers and an
  // outside thread on 2 cores, two spinners would starve the third).
  bool try_start_searching(std::uint64_t limit) noexcept {
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    do {
      // A guest takes one of the places (enter_guest()).
      if (searchers(s) + guests(s) >= limit) return false;
      // Relaxed: a producer that misses this searcher wakes a sleeper it
      // did not need to; nothing is lost.
    } while (!state_.compare_exchange_weak(s, s + one_searcher, std::memory_order_relaxed));
    return true;
  }

  // Worker: found a job while searching. If it was the last searcher and
  // work is left, the caller must call new_work(), since producers that saw
  // it searching did not wake anybody. Returns true when it was the last.
  bool stop_searching() noexcept {
    // seq_cst: the caller's following re-check of the queues (seq_cst loads)
    // pairs with a producer's push and load of the state, as in prepare().
    return searchers(state_.fetch_sub(one_searcher, std::memory_order_seq_cst)) == 1;
  }

  // Worker: searching (or, if it did not search, idle) -> sleeping
  // (announced). seq_cst pairs with the seq_cst load in new_work(): the
  // worker's re-check of the queues (seq_cst loads, after this) and the
  // producer's push (a seq_cst store, before its load) form a Dekker pair,
  // so either the worker sees the job or the producer sees the sleeper (and
  // no searcher).
  void prepare(bool was_searching) noexcept {
    state_.fetch_add(was_searching ? one_sleeper - one_searcher : one_sleeper,
                     std::memory_order_seq_cst);
  }

  // Worker: found work after prepare(); sleeping -> searching. A token
  // granted to us in between is withdrawn, so no later sleeper wakes for
  // nothing.
  void cancel() noexcept;

  // Worker: sleep until a producer grants a token (then sleeping ->
  // searching) or stop() is called (then it is neither). Returns false when
  // the pool is stopping. Tokens are anonymous: any sleeper may take one. So
  // for work that only this worker may take (its mailbox), `own(ctx)` is
  // asked too, under the lock, after every notification: true wakes it
  // (sleeping -> searching) without a token (see wake_sleepers()).
  bool park(bool (*own)(const void*) noexcept = nullptr, const void* ctx = nullptr);

  // Producer, after making a job visible with a seq_cst store.
  void new_work() noexcept {
    // seq_cst: see prepare().
    const std::uint64_t s = state_.load(std::memory_order_seq_cst);
    if (wants_a_worker(s)) wake_one(s);
  }

  // A thread that is not a worker stands in for one (pool::waits::stand_in_scope):
  // while it is in, one worker fewer searches or is woken, so that the
  // threads running the pool's work stay as many as its workers. At most
  // one guest at a time (the pool's helper slot). seq_cst, as prepare():
  // leave_guest() and the guest's re-check of the queues that follows pair
  // with a producer's push and load of the state in new_work(), so either
  // the producer saw the guest gone (and woke a sleeper) or the guest sees
  // the job (and calls new_work() itself). enter_guest() pairs with nothing:
  // a producer that misses the bit wakes one sleeper too many.
  void enter_guest() noexcept { state_.fetch_add(one_guest, std::memory_order_seq_cst); }
  void leave_guest() noexcept { state_.fetch_sub(one_guest, std::memory_order_seq_cst); }

  // Any thread, after resuming a paused pool: grants every sleeper a token,
  // searchers or not. seq_cst, as in new_work().
  void wake_all() noexcept;

  // Any thread, after making visible (with a seq_cst store) work that only
  // one worker may take: notifies the sleepers, so that the one it is for
  // finds it through park()'s `own` check. A token would not do: a worker
  // that announced its sleep later could take it instead. seq_cst, as in
  // new_work().
  void wake_sleepers() noexcept;

  // Any thread; a hint: whether some worker is searching for work or asleep,
  // so that a job made visible now would be taken soon. Relaxed: a running
  // batch only chooses by it whether to hand half of its range over
  // (weft/batch.hpp); a stale answer costs a split or delays one.
  [[nodiscard]] bool someone_idle() const noexcept {
    const std::uint64_t s = state_.load(std::memory_order_relaxed);
    return searchers(s) != 0 || sleepers(s) != 0;
  }

  // Any thread; a hint: whether a worker has been woken and has not run
  // yet. Relaxed: an outside waiter only chooses how to wait by it.
  [[nodiscard]] bool waking() const noexcept {
    return tokens(state_.load(std::memory_order_relaxed)) != 0;
  }

  // Wakes every worker for good; park() returns false from now on.
  void stop();

  // The idle listeners (scheduler::add_idle_listener). add_listener throws
  // std::bad_alloc; remove_listener returns once no call of l is under way.
  void add_listener(idle_listener& l);
  void remove_listener(idle_listener& l) noexcept;
  // Worker, as it starts an idle search: tells the listeners, if any. One
  // load, of the line the worker's try_start_searching() just wrote, when
  // there are none.
  void notify_listeners() noexcept {
    // Relaxed: a listener is told of the idle periods that begin after it
    // was added, give or take one (scheduler::add_idle_listener).
    if (listener_count_.load(std::memory_order_relaxed) != 0) [[unlikely]] {
      notify_listeners_locked();
    }
  }

 private:
  // Three 21-bit counters in one word: sleepers, tokens, searchers; and the
  // top bit, set while a guest stands in for a worker.
  static constexpr unsigned field_bits = 21;
  static constexpr std::uint64_t field_mask = (std::uint64_t{1} << field_bits) - 1;
  static constexpr std::uint64_t one_sleeper = 1;
  static constexpr std::uint64_t one_token = one_sleeper << field_bits;
  static constexpr std::uint64_t one_searcher = one_token << field_bits;
  static std::uint64_t sleepers(std::uint64_t s) noexcept { return s & field_mask; }
  static std::uint64_t tokens(std::uint64_t s) noexcept { return (s >> field_bits) & field_mask; }
  static std::uint64_t searchers(std::uint64_t s) noexcept {
    return (s >> (2 * field_bits)) & field_mask;
  }
  static constexpr std::uint64_t one_guest = std::uint64_t{1} << 63;
  static std::uint64_t guests(std::uint64_t s) noexcept { return s >> 63; }
  // Whether a job just made visible needs a sleeper woken: nobody searches
  // (a searcher would find it), and a sleeper without a token is left once
  // a guest has taken its place.
  static bool wants_a_worker(std::uint64_t s) noexcept {
    return searchers(s) == 0 && sleepers(s) > tokens(s) + guests(s);
  }

  void wake_one(std::uint64_t s) noexcept;
  void notify_listeners_locked() noexcept;

  // Any thread.
  alignas(cache_line) std::atomic<std::uint64_t> state_{0};
  // listeners_.size(), written under mutex_. In the padding of state_'s
  // line, as listeners_ is in that of mutex_'s: the controller, and so the
  // pool's layout, is as large as without them.
  std::atomic<std::size_t> listener_count_{0};
  // Guards the condition variable's wait and listeners_; stopping_ is
  // written under it.
  alignas(cache_line) std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<idle_listener*> listeners_;
};

}  // namespace weft::detail
