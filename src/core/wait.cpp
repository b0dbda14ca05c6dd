// The waits of the pool that are not templates (detail/core/wait.hpp has
// the rest): wait() and wait_for() (epochs drained in order,
// docs/waiting.md), the destructor's drain, a latch's await from any
// thread, and a stand-in's scope. Every wait decides how the calling thread
// waits through waits::wait_on(): running jobs, helping its own pool, or
// blocking in the core's idle_waiters part until a job's runner wakes it.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>

#include "weft/detail/fault.hpp"
#include "weft/detail/visit.hpp"
#include "weft/pool.hpp"

namespace weft {

template <class Done, class Block>
void pool::waits::wait_on_latch(pool& p, const detail::latch& l, Done& done, Block&& block,
                                std::chrono::steady_clock::time_point deadline) {
  // nap_until() subscribes a waiter to the latch; it does not change its
  // value. A thread that helps naps on the latch when it has nothing to
  // run, and set() wakes it (docs/waiting.md, "A worker's wait that finds
  // nothing to run").
  auto nap = [&l, deadline](std::chrono::microseconds d) {
    const_cast<detail::latch&>(l).nap_until(
        std::min(std::chrono::steady_clock::now() + d, deadline));
  };
  // Our worker (or a thread running our sequential jobs) keeps the pool
  // alive. Any other thread saw the latch unset but may not touch the pool
  // until it has published its visit and checked again: the pool is
  // destroyed once the latch's job has finished (docs/waiting.md).
  if (detail::tls.owner == &p) {
    wait_on(p, done, block, nap);
    return;
  }
  detail::fault::at(detail::fault::await_point::entered);
  const detail::visit_scope visit{&p};
  if (l.is_set_now()) return;
  detail::fault::at(detail::fault::await_point::visiting);
  wait_on(p, done, block, nap);
}

pool::waits::stand_in_scope::stand_in_scope(pool& p) : p_(p) {
  // Only a thread that is nobody to any pool: not a worker, not running a
  // sequential pool's jobs, helping none, in no worker hook (all of which
  // this_worker::index() reports).
  const detail::context& ctx = detail::tls;
  if (ctx.owner != nullptr || ctx.helping != nullptr ||
      ctx.helper_index != detail::no_helper_index || p.sequential() || p.size() < 2 || p.paused()) {
    return;
  }
  helper_.emplace(p);
  if (!helper_->held()) {
    helper_.reset();
    return;
  }
  try {
    ticket_ = counting::count_spawn(p);  // throws pool_closed once the destructor has begun
  } catch (...) {
    helper_.reset();
    throw;
  }
  running_.emplace(&p, ticket_.epoch);
  p.sleep_.enter_guest();
  detail::tls.standing_in = &p;
  held_ = true;
}

pool::waits::stand_in_scope::~stand_in_scope() {
  if (!held_) return;
  detail::tls.standing_in = nullptr;
  running_.reset();  // the innermost scope of this thread: unlinked first
  // A producer that saw the guest did not wake a sleeper for its job: the
  // seq_cst loads of this re-check pair with its push, as leave_guest()'s
  // RMW pairs with its load of the state (detail/sleep.hpp).
  p_.sleep_.leave_guest();
  if (!p_.all_queues_empty()) p_.sleep_.new_work();
  helper_.reset();
  counting::count_finished(p_, *ticket_.cache, ticket_.epoch, 1);
  counting::end_submission(p_, ticket_);  // last: the pool may be destroyed from here on
}

void pool::waits::await(pool& p, const detail::latch& l) {
  auto is_set = [&l] { return l.is_set(); };
  // block() installs our parker in the latch; it does not change its value.
  wait_on_latch(
      p, l, is_set, [&] { const_cast<detail::latch&>(l).block(); },
      std::chrono::steady_clock::time_point::max());
}

bool pool::waits::help_from_lane(pool& p, detail::lane& mine) noexcept {
  const helper_scope helper{p};
  if (!helper.held()) return false;
  detail::job* j = nullptr;
  // Our visit (await()) or the wait's contract keeps the pool, and so
  // the lane, alive.
  if (mine.queue.take(&j, 1) == 0) return false;
  // j is counted and has not finished, so the destructor cannot get past
  // its drain before j retires: the pool is alive until then. Count
  // ourselves a visitor, as help_loop() does, for what retire() touches
  // after the finish count: entering precedes j's seq_cst finish count in
  // program order, which the destructor reads before anyone_inside().
  p.guests_.enter();
  ++detail::tls.depth;
  p.execute(j);
  --detail::tls.depth;
  p.guests_.leave();
  return true;
}

bool pool::waits::await_until(pool& p, const detail::latch& l,
                              std::chrono::steady_clock::time_point deadline) {
  // A worker helps until the latch is set or the deadline has passed (it
  // looks between jobs, so a long job makes it late).
  auto set_or_late = [&] { return l.is_set() || std::chrono::steady_clock::now() >= deadline; };
  wait_on_latch(
      p, l, set_or_late, [&] { const_cast<detail::latch&>(l).block_until(deadline); }, deadline);
  return l.is_set();
}

template <class Done>
void pool::waits::nap_until_idle(pool& p, Done& done, std::chrono::microseconds d,
                                 std::optional<std::chrono::steady_clock::time_point> deadline) {
  if (deadline) {
    d = std::min(d, std::chrono::ceil<std::chrono::microseconds>(*deadline -
                                                                 std::chrono::steady_clock::now()));
    if (d <= std::chrono::microseconds::zero()) return;
  }
  detail::worker* self = detail::tls.self;
  if (self == nullptr) {
    std::this_thread::sleep_for(d);
    return;
  }
  detail::fault::before_nap();
  p.idle_.nap(done, self->nap, d);
}

void pool::wait() { wait_until_idle(std::nullopt); }

bool pool::wait_until_idle(std::optional<std::chrono::steady_clock::time_point> deadline) {
  if (on_own_worker()) {
    throw usage_error("weft::pool::wait() was called from a job of pool '" + name_ +
                      "' and would wait for itself; wait on a future or a task_group there, "
                      "or use wait_until()");
  }
  if (detail::tls.standing_in == this) {
    throw usage_error(
        "weft::pool::wait() was called from an element function of a parallel "
        "algorithm whose caller runs it in a worker's place on pool '" +
        name_ +
        "', and would wait for that loop itself; wait on a future or a "
        "task_group there, or use wait_until()");
  }
  // Jobs submitted from now on belong to a later epoch than target; the
  // ones submitted so far, and everything they spawn, to target or earlier.
  const std::uint64_t target = accounting_.epoch();
  // A worker of another pool waits by helping its own pool and never blocks
  // here: tell our workers to hand over their counts meanwhile
  // (flush_requested). A blocking waiter does so in block_until().
  const pool* own = detail::tls.owner;
  const bool helping = !sequential() && own != nullptr && !own->sequential();
  if (helping) idle_.want_flush();
  struct leave_guard {
    detail::idle_waiters* waiters;
    ~leave_guard() {
      if (waiters != nullptr) waiters->unwant_flush();
    }
  } guard{helping ? &idle_ : nullptr};
  auto late = [&deadline] { return deadline && std::chrono::steady_clock::now() >= *deadline; };
  auto wait_until_drained = [&](std::uint64_t e) {
    const auto parity = static_cast<unsigned>(e & 1);
    auto drained = [this, parity, e] {
      return accounting_.drained(e) || counting::quiescent(*this, parity, parity);
    };
    // A timed wait also stops at the deadline; block_until() looks at it
    // at least every millisecond.
    auto drained_or_late = [&] { return drained() || late(); };
    auto nap = [&](std::chrono::microseconds d) {
      waits::nap_until_idle(*this, drained_or_late, d, deadline);
    };
    waits::wait_on(
        *this, drained_or_late, [&] { idle_.block_until(drained_or_late); }, nap);
    return drained();
  };
  if (!accounting_.drain(target, wait_until_drained, idle_)) return false;
  rethrow_pending_error();
  return true;
}

void pool::drain_all() {
  auto drained = [this] { return counting::quiescent(*this); };
  auto nap = [&](std::chrono::microseconds d) {
    waits::nap_until_idle(*this, drained, d, std::nullopt);
  };
  waits::wait_on(
      *this, drained, [&] { idle_.block_until(drained); }, nap);
}

}  // namespace weft
