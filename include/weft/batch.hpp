// Batches: pool::spawn_all and pool::submit_all publish a whole range of
// callables to the workers at once (one store a thief sees, one wake-up),
// where spawn/submit in a loop would publish and wake once per job
// (docs/continuations.md, "Batches").
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <ranges>
#include <type_traits>
#include <utility>
#include <vector>

#include "detail/job.hpp"
#include "future.hpp"
#include "pool.hpp"

namespace weft {

// Counts, builds and then publishes the jobs of a batch. Until publish(),
// a failure (std::bad_alloc, pool_closed, a callable's copy throwing)
// undoes every job built so far, none of which has run: all or nothing.
template <class Job>
struct pool::batch_builder {
  pool& owner;
  std::vector<ticket> tickets;
  std::vector<detail::job*> jobs;
  bool published = false;
  // The flags of the batch's cancellable jobs: the purge_clock is read once
  // for the batch, not per job (by_1000 was 5-8% slower per job).
  std::uint32_t flags = pool::cancellable_flags();

  explicit batch_builder(pool& p) noexcept : owner(p) {}
  batch_builder(const batch_builder&) = delete;
  batch_builder& operator=(const batch_builder&) = delete;
  ~batch_builder() {
    if (!published) {
      for (detail::job* j : jobs) Job::undo(owner, j);
    }
    // The last touch of the pool by a thread that is not a worker.
    for (const ticket& t : tickets) owner.end_submission(t);
  }

  void reserve(std::size_t n) {
    tickets.reserve(n);
    jobs.reserve(n);
  }

  // Counts and builds one job from the callable f.
  template <class F>
  void add(F&& f) {
    if (jobs.size() == jobs.capacity()) reserve(2 * jobs.size() + 16);
    tickets.push_back(owner.count_spawn());  // within capacity: cannot throw
    jobs.push_back(Job::make(owner, tickets.back(), std::forward<F>(f), flags));
  }

  // add() for every callable of the range, as it yields them; a range that
  // knows its size is counted with one ticket for all its jobs (one epoch
  // read and one count, where add() pays both per job).
  template <class Range>
  void add_all(Range&& callables) {
    using Ref = std::ranges::range_reference_t<Range>;
    if constexpr (std::ranges::sized_range<Range>) {
      const auto size = static_cast<std::size_t>(std::ranges::size(callables));
      if (size == 0) return;
      if (size <= std::numeric_limits<std::uint32_t>::max()) {
        jobs.reserve(size);
        tickets.reserve(tickets.size() + 1);  // so that nothing throws once counted
        tickets.push_back(owner.count_spawn(static_cast<std::uint32_t>(size)));
        const ticket& t = tickets.back();
        std::size_t made = 0;
        try {
          for (auto&& f : callables) {
            jobs.push_back(Job::make(owner, t, std::forward<Ref>(f), flags));  // within capacity
            ++made;
          }
        } catch (...) {
          // Job::make counted its own job finished; the ones after it were
          // counted and will never be made.
          if (const std::size_t never = size - made - 1; never != 0) {
            owner.count_finished(*t.cache, t.epoch, never);
          }
          throw;
        }
        return;
      }
      reserve(size);
    }
    for (auto&& f : callables) add(std::forward<Ref>(f));
  }

  void publish() noexcept {
    published = true;
    const std::size_t pushed = owner.push_many(jobs.data(), jobs.size());
    // Out of memory for a queue: the jobs run here, in order.
    for (std::size_t i = pushed; i < jobs.size(); ++i) jobs[i]->run(jobs[i]);
  }
};

// spawn_all's jobs: detached calls, as spawn() makes.
template <class F>
struct pool::spawn_batch_job {
  using call = detached_call<F>;
  template <class G>
  static detail::job* make(pool& p, const ticket& t, G&& g, std::uint32_t flags) {
    detail::heap_job* j = nullptr;
    try {
      j = p.allocate_job(*t.cache);
    } catch (...) {
      p.count_finished(*t.cache, t.epoch, 1);
      throw;
    }
    j->epoch = t.epoch;
    try {
      detail::construct_callable<call>(j, &p, std::forward<G>(g));
    } catch (...) {
      p.discard(j);
      throw;
    }
    j->run = &run_posted<call>;
    if constexpr (call::cancellable) j->flags = flags;
    return j;
  }
  static void undo(pool& p, detail::job* base) noexcept {
    auto* j = static_cast<detail::heap_job*>(base);
    detail::destroy_callable<call>(j);
    p.discard(j);
  }
};

// submit_all's jobs: the states of futures, as submit() makes.
template <class F>
struct pool::submit_batch_job {
  using state = detail::future_job<std::invoke_result_t<F&>, F>;
  // `flags` unused: a future's state stamps itself (future_job).
  template <class G>
  static detail::job* make(pool& p, const ticket& t, G&& g, std::uint32_t /*flags*/) {
    try {
      return p.make_state<state>(t, std::forward<G>(g));
    } catch (...) {
      p.count_finished(*t.cache, t.epoch, 1);
      throw;
    }
  }
  static void undo(pool& p, detail::job* base) noexcept {
    auto* s = static_cast<state*>(base);
    detail::job_cache& counted = *s->counted;
    const unsigned epoch = s->epoch;
    state::destroy_job(s);
    p.count_finished(counted, epoch, 1);
  }
};

template <class Range>
void pool::spawn_all(Range&& callables) {
  static_assert(std::ranges::input_range<Range>,
                "weft::pool::spawn_all: pass a range of callables (a container or a view)");
  using F = std::decay_t<std::ranges::range_reference_t<Range>>;
  check_callable<F>();
  if constexpr (std::is_invocable_v<F&>) {
    if (bounded_here()) {
      // Under a bound each job takes its slot (or meets the policy) alone.
      for (auto&& f : callables) spawn(std::forward<std::ranges::range_reference_t<Range>>(f));
      return;
    }
    batch_builder<spawn_batch_job<F>> batch{*this};
    batch.add_all(std::forward<Range>(callables));
    batch.publish();
  }
}

template <class Range>
auto pool::submit_all(Range&& callables) {
  static_assert(std::ranges::input_range<Range>,
                "weft::pool::submit_all: pass a range of callables (a container or a view)");
  using F = std::decay_t<std::ranges::range_reference_t<Range>>;
  check_callable<F>();
  if constexpr (std::is_invocable_v<F&>) {
    using R = std::invoke_result_t<F&>;
    using job = submit_batch_job<F>;
    if (bounded_here()) {
      // Under a bound each job takes its slot (or meets the policy) alone.
      std::vector<future<R>> futures;
      if constexpr (std::ranges::sized_range<Range>) futures.reserve(std::ranges::size(callables));
      for (auto&& f : callables) {
        futures.push_back(submit(std::forward<std::ranges::range_reference_t<Range>>(f)));
      }
      return futures;
    }
    batch_builder<job> batch{*this};
    batch.add_all(std::forward<Range>(callables));
    std::vector<future<R>> futures;
    futures.reserve(batch.jobs.size());  // before publishing: the last that may throw
    batch.publish();
    for (detail::job* j : batch.jobs) {
      futures.push_back(detail::future_access::make<R>(static_cast<typename job::state*>(j)));
    }
    return futures;
  } else {
    return std::vector<future<detail::not_callable>>{};
  }
}

}  // namespace weft
