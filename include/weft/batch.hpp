// Batches: pool::spawn_all and pool::submit_all hand a whole range of
// callables to the workers at once, where spawn/submit in a loop would
// publish and wake once per job (docs/continuations.md, "Batches").
// submit_all publishes one job per future with one store and one wake-up;
// spawn_all keeps its callables in one array and queues one job for all of
// them, which splits as workers go idle.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <ranges>
#include <type_traits>
#include <utility>
#include <vector>

#include "detail/context.hpp"
#include "detail/future_job.hpp"
#include "detail/job.hpp"
#include "detail/local.hpp"
#include "detail/scheduler.hpp"
#include "future.hpp"
#include "pool.hpp"

namespace weft::detail {

// The shared part of a spawn_all batch's block (weft/batch.hpp).
struct batch_block_base {
  // job::flags of every piece: cancellable and the batch's purge stamp
  // (scheduler::cancellable_flags(), read once for the batch), or 0 for callables
  // that purge may not drop; and job_flags::batch.
  std::uint32_t flags = 0;
  // Pieces made and not yet finished; the last to finish frees the block.
  std::atomic<std::size_t> pieces{1};
};

// The callable of a batch piece, whatever the batch's callable type: it
// stands for the batch's callables [lo, hi).
struct batch_span {
  pool* owner;
  batch_block_base* block;
  std::size_t lo;
  std::size_t hi;
  // The index of the worker that made the piece, or no_maker: a piece that
  // runs on another thread was stolen, and splits at once (weft/batch.hpp).
  std::uint32_t maker;
  static constexpr std::uint32_t no_maker = ~std::uint32_t{0};
};

// Counts, builds and then publishes the jobs of a batch. Until publish(),
// a failure (std::bad_alloc, pool_closed, a callable's copy throwing)
// undoes every job built so far, none of which has run: all or nothing.
template <class Job>
struct batch_builder {
  pool& owner;
  std::vector<scheduler::ticket> tickets;
  std::vector<job*> jobs;
  bool published = false;
  // The flags of the batch's cancellable jobs: the purge_clock is read once
  // for the batch, not per job (by_1000 was 5-8% slower per job).
  std::uint32_t flags = scheduler::cancellable_flags();

  explicit batch_builder(pool& p) noexcept : owner(p) {}
  batch_builder(const batch_builder&) = delete;
  batch_builder& operator=(const batch_builder&) = delete;
  ~batch_builder() {
    if (!published) {
      for (job* j : jobs) Job::undo(owner, j);
    }
    // The last touch of the pool by a thread that is not a worker.
    for (const scheduler::ticket& t : tickets) scheduler::end_submission(owner, t);
  }

  void reserve(std::size_t n) {
    tickets.reserve(n);
    jobs.reserve(n);
  }

  // Counts and builds one job from the callable f.
  template <class F>
  void add(F&& f) {
    if (jobs.size() == jobs.capacity()) reserve(2 * jobs.size() + 16);
    tickets.push_back(scheduler::count_spawn(owner));  // within capacity: cannot throw
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
        tickets.push_back(scheduler::count_spawn(owner, static_cast<std::uint32_t>(size)));
        const scheduler::ticket& t = tickets.back();
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
            scheduler::count_finished(owner, *t.cache, t.epoch, never);
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
    const std::size_t pushed = scheduler::publish(owner, jobs.data(), jobs.size());
    // Out of memory for a queue: the jobs run here, in order.
    for (std::size_t i = pushed; i < jobs.size(); ++i) jobs[i]->run(jobs[i]);
  }
};

// spawn_all's jobs: detached calls, as spawn() makes.
template <class F>
struct spawn_batch_job {
  using call = scheduler::detached_call<F>;
  template <class G>
  static job* make(pool& p, const scheduler::ticket& t, G&& g, std::uint32_t flags) {
    heap_job* j = nullptr;
    try {
      j = scheduler::allocate_job(p, *t.cache);
    } catch (...) {
      scheduler::count_finished(p, *t.cache, t.epoch, 1);
      throw;
    }
    j->epoch = t.epoch;
    try {
      construct_callable<call>(j, &p, std::forward<G>(g));
    } catch (...) {
      scheduler::discard(p, j);
      throw;
    }
    j->run = scheduler::run_posted<call>();
    if constexpr (call::cancellable) j->flags = flags;
    return j;
  }
  static void undo(pool& p, job* base) noexcept {
    auto* j = static_cast<heap_job*>(base);
    destroy_callable<call>(j);
    scheduler::discard(p, j);
  }
};

// spawn_all's callables, copied or moved into one array as the batch is
// made. Each is destroyed as soon as it has run or been dropped, by the
// piece that covers it; the last piece to finish frees the array.
template <class F>
struct batch_block : batch_block_base {
  F* items;
  std::size_t capacity;
  std::size_t size = 0;  // made

  explicit batch_block(std::size_t n) : items(std::allocator<F>{}.allocate(n)), capacity(n) {}
  batch_block(const batch_block&) = delete;
  batch_block& operator=(const batch_block&) = delete;
  ~batch_block() { std::allocator<F>{}.deallocate(items, capacity); }

  // A block of the n callables of the range, not yet handed to any piece;
  // all or nothing: if one throws, those made are destroyed.
  struct unsent {
    batch_block* b;
    explicit unsent(batch_block* block) noexcept : b(block) {}
    unsent(const unsent&) = delete;
    unsent& operator=(const unsent&) = delete;
    ~unsent() {
      if (b == nullptr) return;
      std::destroy_n(b->items, b->size);
      delete b;
    }
  };
  template <class Range>
  static batch_block* make(Range&& callables, std::size_t n) {
    using Ref = std::ranges::range_reference_t<Range>;
    auto b = std::make_unique<batch_block>(n);
    std::size_t made = 0;
    try {
      for (auto&& f : callables) {
        if (made == n) break;  // a range that yields more than its size said
        std::construct_at(b->items + made, std::forward<Ref>(f));
        ++made;
      }
    } catch (...) {
      std::destroy_n(b->items, made);
      throw;
    }
    b->size = made;  // fewer than said: the rest stays unused
    return b.release();
  }
};

// A job that runs the callables [lo, hi) of a batch, in order, splitting
// off the rest in halves for other workers, as a loop of weft/algorithm.hpp
// splits its range (rayon's adaptive splitter), except that nobody waits
// for the halves: each piece is counted as a job of its own, and the last
// to finish frees the block.
// - A piece that starts on a worker other than the one that made it (the
//   first piece, or a stolen one) first splits its left spine: it queues
//   [mid, hi) and keeps [lo, mid), bit_width(workers) times, so that the
//   callables behind a long one are not all kept from idle workers.
// - Before each callable, if a worker is idle and the own deque is empty,
//   it queues the second half of what is left.
// Before each callable it also looks for what the pool looks for before
// each job: a pause (on a worker the rest goes back to a queue, held there)
// and a purge begun since the batch was made (the rest is dropped). Off the
// workers (sequential mode, a helping thread) it runs [lo, hi) whole.
template <class F>
struct batch_piece : batch_span {
  using items = batch_block<F>;
  static constexpr bool cancellable = scheduler::detached_call<F>::cancellable;

  batch_piece(pool* p, items* b, std::size_t from, std::size_t to, std::uint32_t by) noexcept
      : batch_span{p, b, from, to, by} {}

  // job::flags of every piece of the batch (scheduler::fill_posted()).
  [[nodiscard]] std::uint32_t job_flags() const noexcept { return block->flags; }

  scheduler::no_epilogue operator()() noexcept {
    pool& p = *owner;
    items& b = *static_cast<items*>(this->block);
    worker* self = scheduler::on_worker_of(p) ? tls.self : nullptr;
    if (self != nullptr && maker != self->index) split_spine(p, *self, b);
    std::size_t ran = 0;
    for (std::size_t i = lo; i < hi; ++i) {
      // Relaxed: hints, as in find_work(); a pause or a purge that comes just
      // after the load is one callable late, as it is for a job taken just
      // before it.
      if (scheduler::maybe_paused(p) && self != nullptr && hold_rest(p, *self, b, i)) [[unlikely]] {
        break;
      }
      if (scheduler::purged_since(p, b.flags)) [[unlikely]] {
        drop(p, b, i, hi);
        hi = i;
        break;
      }
      if (self != nullptr && hi - i > 1 && scheduler::someone_idle(p) &&
          self->deque.private_size() == 0 && self->deque.empty()) {
        // Keep [i, mid), hand over [mid, hi).
        const std::size_t mid = i + (hi - i) / 2;
        if (heap_job* j = make_piece(p, *self, b, mid, hi)) {
          hi = mid;
          queue(p, j);
        }
      }
      try {
        b.items[i]();
      } catch (...) {
        scheduler::report_error(p, std::current_exception());
      }
      std::destroy_at(b.items + i);
      ++ran;
    }
    // Each callable counts as a job in the worker's stats; the piece was
    // counted as one when the worker took it.
    if (self != nullptr && ran > 1) worker::bump(self->counts.jobs, ran - 1);
    release(b);
    return {};
  }

  // Dropped from a queue (purge(), or a worker that took it just as its
  // pool was paused): none of its callables runs.
  scheduler::no_epilogue cancel() noexcept {
    items& b = *static_cast<items*>(this->block);
    // cancelled_at_start() counted the piece as one.
    drop(*owner, b, lo + 1, hi);
    std::destroy_at(b.items + lo);
    release(b);
    return {};
  }

 private:
  void split_spine(pool& p, worker& self, items& b) noexcept {
    std::array<job*, std::numeric_limits<std::size_t>::digits> made{};
    std::size_t k = 0;
    for (std::size_t left = std::bit_width(p.size()); left > 0 && hi - lo > 1; --left) {
      const std::size_t mid = lo + (hi - lo) / 2;
      heap_job* j = make_piece(p, self, b, mid, hi);
      if (j == nullptr) break;
      made[k++] = j;
      hi = mid;
    }
    // The farthest half first: thieves take the oldest.
    const std::size_t pushed = scheduler::publish(p, made.data(), k);
    // No memory for the deque to grow: they run here.
    for (std::size_t m = pushed; m < k; ++m) made[m]->run(made[m]);
  }

  // Queues a piece made by this worker in its deque, where idle workers
  // find it; with no memory for the deque to grow, it runs here.
  static void queue(pool& p, job* j) noexcept {
    if (scheduler::publish(p, &j, 1) == 0) j->run(j);
  }

  static void drop(pool& p, items& b, std::size_t from, std::size_t to) noexcept {
    if (from >= to) return;
    scheduler::count_cancelled(p, to - from);
    std::destroy(b.items + from, b.items + to);
  }

  // The pool was paused before callable i: [i, hi) goes to the injector's
  // front as a piece of its own, held there as a job a worker took just as
  // the pool was paused is held (hold_if_paused(), which also drops it if a
  // purge missed it). Returns false when there is no memory for that piece;
  // the rest then runs here, as a job that cannot be held back does.
  bool hold_rest(pool& p, worker& self, items& b, std::size_t i) noexcept {
    heap_job* j = make_piece(p, self, b, i, hi);
    if (j == nullptr) return false;
    hi = i;
    // Resumed meanwhile: it runs here after all.
    if (job* back = scheduler::hold_if_paused(p, j)) back->run(back);
    return true;
  }

  static void release(items& b) noexcept {
    // acq_rel: release, so that what this piece did with the block (its
    // callables destroyed) comes before the free; acquire, so that the last
    // piece frees it after everything the others did. Pairs with itself.
    if (b.pieces.fetch_sub(1, std::memory_order_acq_rel) == 1) delete &b;
  }
};

// A piece for [lo, hi) of b, made and counted by self (the calling
// thread's worker of p), not yet queued; nullptr when there is no memory for
// it.
template <class F>
heap_job* make_piece(pool& p, worker& self, batch_block<F>& b, std::size_t lo,
                     std::size_t hi) noexcept {
  using piece = batch_piece<F>;
  static_assert(fits_inline<piece> && std::is_standard_layout_v<piece>,
                "a piece's callable is read as a batch_span (pool::callables_in())");
  heap_job* j = nullptr;
  try {
    j = self.cache.allocate();
  } catch (...) {
    return nullptr;
  }
  j->epoch = local::count_own_spawn(p, self);
  // Cannot throw: a piece's constructor is noexcept.
  scheduler::fill_posted<piece>(p, j, &p, &b, lo, hi, static_cast<std::uint32_t>(self.index));
  // Relaxed: the caller's own piece keeps the block alive; the new piece
  // reaches other threads through a queue, which publishes it.
  b.pieces.fetch_add(1, std::memory_order_relaxed);
  return j;
}

// Queues the first piece of a whole batch; the batch is the piece's once
// it returns.
template <class F>
void post_batch(pool& p, typename batch_block<F>::unsent& batch) {
  using piece = batch_piece<F>;
  batch_block<F>& b = *batch.b;
  b.flags = job_flags::batch | (piece::cancellable ? scheduler::cancellable_flags() : 0);
  scheduler::post<piece>(p, &p, &b, std::size_t{0}, b.size, batch_span::no_maker);
  batch.b = nullptr;  // the piece's now (it may have run and freed it already)
}

// submit_all's jobs: the states of futures, as submit() makes.
template <class F>
struct submit_batch_job {
  using state = future_job<std::invoke_result_t<F&>, F>;
  // `flags` unused: a future's state stamps itself (future_job).
  template <class G>
  static job* make(pool& p, const scheduler::ticket& t, G&& g, std::uint32_t /*flags*/) {
    try {
      return scheduler::make_state<state>(p, t, std::forward<G>(g));
    } catch (...) {
      scheduler::count_finished(p, *t.cache, t.epoch, 1);
      throw;
    }
  }
  static void undo(pool& p, job* base) noexcept {
    auto* s = static_cast<state*>(base);
    job_cache& counted = *s->counted;
    const unsigned epoch = s->epoch;
    state::destroy_job(s);
    scheduler::count_finished(p, counted, epoch, 1);
  }
};

}  // namespace weft::detail

namespace weft {

template <class Range>
void pool::spawn_all(Range&& callables) {
  static_assert(std::ranges::input_range<Range>,
                "weft::pool::spawn_all: pass a range of callables (a container or a view)");
  using Ref = std::ranges::range_reference_t<Range>;
  using F = std::decay_t<Ref>;
  posting::check_callable<F>();
  if constexpr (std::is_invocable_v<F&>) {
    if (posting::bounded_here(*this)) {
      // Under a bound each job takes its slot (or meets the policy) alone.
      for (auto&& f : callables) spawn(std::forward<Ref>(f));
      return;
    }
    if constexpr (std::ranges::sized_range<Range>) {
      const auto n = static_cast<std::size_t>(std::ranges::size(callables));
      if (n >= posting::batch_block_min) {
        using block = detail::batch_block<F>;
        typename block::unsent batch{block::make(std::forward<Range>(callables), n)};
        if (batch.b->size != 0) detail::post_batch<F>(*this, batch);
        return;
      }
    }
    // A small batch, or a range that does not know its size (a filter
    // view): a job per callable, all published at once.
    detail::batch_builder<detail::spawn_batch_job<F>> jobs{*this};
    jobs.add_all(std::forward<Range>(callables));
    jobs.publish();
  }
}

template <class Range>
auto pool::submit_all(Range&& callables) {
  static_assert(std::ranges::input_range<Range>,
                "weft::pool::submit_all: pass a range of callables (a container or a view)");
  using F = std::decay_t<std::ranges::range_reference_t<Range>>;
  posting::check_callable<F>();
  if constexpr (std::is_invocable_v<F&>) {
    using R = std::invoke_result_t<F&>;
    using job = detail::submit_batch_job<F>;
    if (posting::bounded_here(*this)) {
      // Under a bound each job takes its slot (or meets the policy) alone.
      std::vector<future<R>> futures;
      if constexpr (std::ranges::sized_range<Range>) futures.reserve(std::ranges::size(callables));
      for (auto&& f : callables) {
        futures.push_back(submit(std::forward<std::ranges::range_reference_t<Range>>(f)));
      }
      return futures;
    }
    detail::batch_builder<job> batch{*this};
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
