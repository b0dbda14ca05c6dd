// The second door between the pool and the front ends built on it
// (docs/design.md, "Keeping the pool small"): what a front end does on one
// of the pool's own workers, for the fork-join fast path. detail/scheduler.hpp
// is the first door, for any thread. Every function here is an inlined
// forward to the pool, so that going through the door costs nothing: join
// and task_group, the two front ends that use it, compile to the code they
// compiled to when they were the pool's friends.
//
// `self` is always the calling thread's worker of `p` (tls.self with
// tls.owner == &p); the functions do not check it.
#pragma once
// Included by weft/pool.hpp right after class pool, before the front ends
// it exports, which use the door; front ends include detail/local.hpp.

#include <cstddef>
#include <utility>

#include "context.hpp"
#include "job.hpp"
#include "latch.hpp"

namespace weft::detail {

struct local {
  // Pushes j into the private part of self's deque (docs/deque.md, "The
  // private part"); wakes a worker if the push published the deque's older
  // private items. A join's second half only: the private part is join's
  // alone, whose contract ("f never waits for g") makes hiding a job safe.
  [[gnu::always_inline]] static void push_private(pool& p, worker& self, job* j) {
    if (self.deque.push_private(j)) p.sleep_.new_work();
  }
  // Pushes j into the public part of self's deque, where an idle worker may
  // take it at once, and tells the sleep protocol (new_work()).
  [[gnu::always_inline]] static void push_public(pool& p, worker& self, job* j) {
    pool::posting::push_own(p, self, j);
  }

  // Runs j, which self took from its own deque, as a worker's loop runs a job.
  [[gnu::always_inline]] static void execute(pool& p, job* j) noexcept { p.execute(j); }

  // Runs the pool's jobs until done() holds, napping with nap(d) when there
  // are none (pool::waits::help_until()).
  template <class Done, class Nap>
  [[gnu::always_inline]] static void help_until(pool& p, Done& done, Nap& nap) {
    pool::waits::help_until(p, done, nap);
  }

  // A task_group's wait on the worker that made it: runs what is on top of
  // self's deque until done() holds; false when the general wait must go on
  // (pool::waits::help_from_own_deque()).
  template <class Done, class Mine>
  [[gnu::always_inline]] static bool help_from_own_deque(pool& p, worker& self, Done& done,
                                                         Mine& mine) {
    return pool::waits::help_from_own_deque(p, self, done, mine);
  }

  // A heap job C{args...} counted with plain stores and queued in the public
  // part of self's deque (pool::posting::post_own()).
  template <class C, class... Args>
  [[gnu::always_inline]] static void post_own(pool& p, worker& self, Args&&... args) {
    pool::posting::post_own<C>(p, self, std::forward<Args>(args)...);
  }
  // Counts a job in the front end's own memory that self then queues with
  // push_public(); returns its epoch parity (pool::counting::count_own_spawn()).
  [[gnu::always_inline]] static unsigned count_own_spawn(pool& p, worker& self) noexcept {
    return pool::counting::count_own_spawn(p, self);
  }
  // A heap job has run: back to its cache, counted finished (pool::counting::retire()).
  // For a task_group's job kept in a heap job of its home's cache.
  [[gnu::always_inline]] static void retire(pool& p, heap_job* j) noexcept {
    pool::counting::retire(p, j);
  }
  // Takes back count_own_spawn() for a job that was never queued.
  [[gnu::always_inline]] static void uncount_own_spawn(worker& self, unsigned epoch) noexcept {
    pool::counting::uncount_own_spawn(self, epoch);
  }

  // The parker worker `index` of p naps on: a join's thief wakes its joiner
  // with it. It lives as long as the pool.
  [[gnu::always_inline]] static parker& nap_of(pool& p, std::size_t index) noexcept {
    return p.roster_[index].nap;
  }
};

}  // namespace weft::detail
