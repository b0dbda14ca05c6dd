// The one job type every front end compiles down to, and the per-thread free
// lists that heap jobs come from.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "atomic_word.hpp"
#include "config.hpp"

namespace weft::detail {

// A unit of work as the queues see it: a pointer to a run function and
// whatever state the concrete job type keeps after this header. Running a job
// hands it over: run() executes the work and disposes of the job (returns it
// to its free list, sets a latch, drops a reference: each kind decides).
struct job {
  using run_fn = void (*)(job*) noexcept;
  run_fn run;
  // job_flags: what pool::purge() and bounded submission need to know of the
  // job; 0 for most. Written before the job is queued, and by the thread
  // that took it from a queue (which then owns it); a join's stolen half
  // also by its joiner and its thief, atomically (join.hpp).
  std::uint32_t flags = 0;

  // The flags, read by a thread that took the job from a queue while the
  // job may be a join's stolen half, whose joiner can announce a nap in
  // them at any time (stealable_half::announce_nap()). Relaxed: the bits
  // such a reader tests were written before the job was queued.
  [[nodiscard]] std::uint32_t taken_flags() noexcept {
    return word_ref{flags}.load(std::memory_order_relaxed);
  }
  // 4 bytes of tail padding follow: a kind whose first member is 4 bytes
  // wide gets it there (the Itanium ABI reuses a non-POD base's padding),
  // so the flags cost it nothing (heap_job, graph_node).
};

// Bits of job::flags.
namespace job_flags {
// A job of pool::spawn, submit, spawn_on, a task_group...: purge() may drop
// it, by running it with `cancel` set (the kind then cancels instead).
inline constexpr std::uint32_t cancellable = 1;
// Set by whoever drops a cancellable job: run() then cancels it (a future
// gets job_cancelled, a detached job is counted cancelled).
inline constexpr std::uint32_t cancel = 2;
// Holds a slot of the pool's bounded submission (pool_options::capacity),
// given back when the job starts or is cancelled.
inline constexpr std::uint32_t throttled = 4;
// A join's stolen second half has run to its end (join.hpp, stealable_half):
// set by the thief with an atomic read-modify-write (detail::word_ref),
// polled by the joiner.
inline constexpr std::uint32_t finished = 8;
// A cancellable job made without the stamp below: a task_group's slot,
// made by its home worker on the fork-join path, where loading the clock
// cost fib's task_group_run_and_wait 7-9% (code layout). A worker that
// takes one just as the pool is paused always puts it back; the home's
// wait() then waits for resume(), as for any job a running job waits for.
inline constexpr std::uint32_t unstamped = 16;
// A join's joiner, waiting for its stolen second half, naps on its worker's
// parker (join.hpp, stealable_half::announce_nap()); the bits from
// purge_stamp_shift up then hold its worker index (a half is never
// cancellable, so it has no purge stamp), and the thief that sets
// `finished` unparks that worker.
inline constexpr std::uint32_t joiner_parked = 32;
// A piece of a pool::spawn_all batch (weft/batch.hpp): its callable is a
// pool::batch_span, and it stands for that many of the batch's callables
// (purge() counts them, not the piece).
inline constexpr std::uint32_t batch = 64;
// The bits from purge_stamp_shift up: purge_clock when the job was made,
// modulo 2^24 (pool::cancellable_flags()). A worker that took a cancellable
// job just as its pool was paused drops it, instead of putting it back, if
// a purge of that pool has begun since then (pool::hold_if_paused(),
// docs/control.md).
inline constexpr unsigned purge_stamp_shift = 8;
inline constexpr std::uint32_t purge_stamp_mask = ~std::uint32_t{0} << purge_stamp_shift;
}  // namespace job_flags

// How many purges have begun, of any pool: the clock that stamps cancellable
// jobs. One counter for the process, not one per pool: a job then loads it
// at a fixed address, which in bench/hipe's memory rows and fib's
// task_group_run_and_wait cost nothing measurable, where a pool member cost
// them 10%. Written by pool::purge() only.
inline std::atomic<std::uint32_t> purge_clock{0};

class job_cache;

// A job from a free list, with the callable stored inline when it fits.
// While free, the free-list link lives in the callable's storage.
struct alignas(cache_line) heap_job : job {
  static constexpr std::size_t storage_size = cache_line - 3 * sizeof(void*);
  unsigned epoch = 0;         // while queued or running: its epoch parity (pool::wait)
  job_cache* home = nullptr;  // the cache the memory belongs to
  alignas(void*) std::byte storage[storage_size];

  // While free: the next free job. A job another thread freed also names
  // one further down the same list (see job_cache::returned_), for the
  // allocator to prefetch.
  [[nodiscard]] heap_job* next() const noexcept { return link(0); }
  [[nodiscard]] heap_job* ahead() const noexcept { return link(1); }
  void set_next(heap_job* n) noexcept { std::memcpy(storage, &n, sizeof(heap_job*)); }
  void set_links(heap_job* n, heap_job* further) noexcept {
    set_next(n);
    std::memcpy(storage + sizeof(heap_job*), &further, sizeof(heap_job*));
  }

 private:
  [[nodiscard]] heap_job* link(std::size_t i) const noexcept {
    heap_job* n = nullptr;
    std::memcpy(&n, storage + i * sizeof(heap_job*), sizeof(heap_job*));
    return n;
  }
};
static_assert(sizeof(heap_job) == cache_line);

template <class C>
constexpr bool fits_inline_v() noexcept {
  constexpr bool small = sizeof(C) <= heap_job::storage_size;
  constexpr bool aligned = alignof(C) <= alignof(void*);
  return small && aligned && std::is_nothrow_move_constructible_v<C>;
}

// Whether a heap job keeps a callable of type C inline (else it is boxed).
template <class C>
inline constexpr bool fits_inline = fits_inline_v<C>();

// A block for the shared state of a future (pool::submit): two cache lines,
// since a future's bookkeeping alone does not fit in a heap_job's one. While
// free, the link to the next free block lives in its first bytes; in use,
// `bytes` provides storage for the state.
struct alignas(cache_line) state_block {
  std::byte bytes[2 * cache_line];

  // While free: the next free block.
  [[nodiscard]] state_block* next() const noexcept {
    state_block* n = nullptr;
    std::memcpy(&n, bytes, sizeof(state_block*));
    return n;
  }
  void set_next(state_block* n) noexcept { std::memcpy(bytes, &n, sizeof(state_block*)); }
};

// Whether a future state of type S is made in a state_block (else with new).
template <class S>
constexpr bool fits_state_block_v() noexcept {
  constexpr bool small = sizeof(S) <= sizeof(state_block);
  constexpr bool aligned = alignof(S) <= alignof(state_block);
  return small && aligned;
}
template <class S>
inline constexpr bool fits_state_block = fits_state_block_v<S>();

// The memory of one job cache's state blocks. A future may outlive its pool,
// and so the cache its state came from; the blocks are therefore not the
// cache's but this slab's. While the cache lives, blocks come back to its
// owner's free list, or to the slab's `returned` stack from other threads.
// When the cache goes away it abandons the slab (abandon()): the blocks
// still out are counted, the stack is marked abandoned, and whichever comes
// last, the cache or the last block given back, frees the slab with all its
// chunks (docs/design.md, "Where jobs live").
class state_slab {
 public:
  state_slab() = default;
  state_slab(const state_slab&) = delete;
  state_slab& operator=(const state_slab&) = delete;
  ~state_slab() = default;

  // Any thread: gives back block b of this slab (its state destroyed).
  void release(state_block* b) noexcept {
    state_block* head = returned_.load(std::memory_order_relaxed);
    for (;;) {
      if (head == abandoned()) {
        // The cache is gone. acq_rel: the counterpart of abandon()'s
        // fetch_add, so that whoever brings the count to 0 frees the slab
        // after every other touch of its blocks.
        if (out_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
        return;
      }
      b->set_next(head);
      // Release pairs with the acquire exchanges in take_returned() and
      // abandon(): the taker sees the link, and the block is reused only
      // after everything this thread did with the state.
      if (returned_.compare_exchange_weak(head, b, std::memory_order_release,
                                          std::memory_order_relaxed)) {
        return;
      }
    }
  }

  // The cache's owner: every block given back by other threads so far.
  state_block* take_returned() noexcept {
    // Acquire pairs with the release CAS in release(). Taking the whole
    // stack with one exchange is what makes it ABA-free.
    return returned_.exchange(nullptr, std::memory_order_acquire);
  }

  // The cache's owner: a new chunk of blocks, linked; throws std::bad_alloc
  // and then leaves the slab as it was.
  state_block* grow() {
    // Chunks double from 16 blocks up to 1024 (128 KiB).
    constexpr std::size_t first_chunk = 16;
    constexpr std::size_t doublings = 6;  // 16 << 6 == 1024
    const std::size_t n = first_chunk << std::min(chunks_.size(), doublings);
    chunks_.reserve(chunks_.size() + 1);
    auto chunk = std::make_unique_for_overwrite<state_block[]>(n);
    for (std::size_t i = 0; i < n; ++i) chunk[i].set_next(i + 1 < n ? &chunk[i + 1] : nullptr);
    state_block* first = &chunk[0];
    chunks_.push_back(std::move(chunk));
    blocks_ += n;
    return first;
  }

  // Called once, by the cache's owner (or whoever destroys the cache after
  // it) as the cache goes away; `owned` is the owner's free list. Frees s now
  // if every block is back, else leaves that to the last one to come back.
  static void abandon(state_slab* s, state_block* owned) noexcept {
    // Acquire pairs with the release CAS in release(): the blocks given back
    // before the mark, and their links, are ours to count.
    state_block* returned = s->returned_.exchange(s->abandoned(), std::memory_order_acquire);
    std::size_t back = 0;
    for (state_block* b = owned; b != nullptr; b = b->next()) ++back;
    for (state_block* b = returned; b != nullptr; b = b->next()) ++back;
    const auto out = static_cast<std::int64_t>(s->blocks_ - back);
    // Nothing out: nobody will release into s again.
    if (out == 0) {
      delete s;
      return;
    }
    // acq_rel: pairs with release()'s fetch_sub. Blocks given back after
    // the mark count down from 0 (below 0 if they beat us here); whoever
    // reaches 0 saw every other change of the count, and frees s.
    if (s->out_.fetch_add(out, std::memory_order_acq_rel) + out == 0) delete s;
  }

 private:
  // The mark of an abandoned slab: the slab's own address, never a block's.
  [[nodiscard]] state_block* abandoned() noexcept { return reinterpret_cast<state_block*>(this); }

  // Any thread pushes, the owner takes all; abandon() marks it.
  alignas(cache_line) std::atomic<state_block*> returned_{nullptr};
  // Once abandoned: blocks still out, as abandon() counted them, minus those
  // given back since the mark.
  std::atomic<std::int64_t> out_{0};
  // The cache's owner only, and abandon().
  std::vector<std::unique_ptr<state_block[]>> chunks_;
  std::size_t blocks_ = 0;
};

// Free list of heap jobs owned by one thread (a worker, or whoever holds the
// external lock of a pool). Jobs freed by the owner go back to the private
// list; jobs freed by any other thread are pushed onto the remote stack, which
// the owner takes whole when its private list runs dry. Taking the whole
// stack with one exchange is what makes the remote stack ABA-free.
class job_cache {
 public:
  job_cache() = default;
  job_cache(const job_cache&) = delete;
  job_cache& operator=(const job_cache&) = delete;
  // States still out keep their slab alive (state_slab::abandon()).
  ~job_cache() {
    if (slab_ != nullptr) state_slab::abandon(slab_, state_free_);
  }

  // Owner only. The jobs this thread freed (and new chunks) first: they are
  // still in its cache.
  heap_job* allocate() {
    if (free_ == nullptr) [[unlikely]]
      return allocate_returned();
    heap_job* j = free_;
    free_ = j->next();
    return j;
  }

  // Owner only.
  void release_local(heap_job* j) noexcept {
    j->set_next(free_);
    free_ = j;
  }

  // Owner only: a block for a future's state, from slab(). Throws
  // std::bad_alloc and then leaves the cache as it was.
  state_block* allocate_state() {
    if (state_free_ == nullptr) refill_states();
    state_block* b = state_free_;
    state_free_ = b->next();
    return b;
  }

  // Owner only: gives back a block of slab().
  void release_state_local(state_block* b) noexcept {
    b->set_next(state_free_);
    state_free_ = b;
  }

  // Owner only: where this cache's state blocks come from (nullptr before
  // the first).
  [[nodiscard]] state_slab* slab() const noexcept { return slab_; }

  // Any thread: gives back the chain first -> ... -> last (linked by next).
  void release_remote(heap_job* first, heap_job* last) noexcept {
    heap_job* head = remote_.load(std::memory_order_relaxed);
    do {
      // A single job (first == last) carries no hint; the first job a
      // worker chained carries none either (worker::free_remote).
      last->set_links(head, nullptr);
      // Release pairs with the acquire exchange in allocate_returned(): the owner sees
      // the links and everything the jobs' last runners wrote into them.
    } while (!remote_.compare_exchange_weak(head, first, std::memory_order_release,
                                            std::memory_order_relaxed));
  }

  // Jobs counted against this cache, per epoch parity (pool::wait() waits
  // for one parity; docs/waiting.md): spawned is written by the cache's
  // owner with stores, or, for a pool's shared cache, by any thread with
  // fetch_add; finished by any thread with fetch_add. All only grow. A line
  // of their own: the owner writes spawned on every spawn, other threads
  // rarely touch them.
  alignas(cache_line) std::atomic<std::uint64_t> spawned[2] = {0, 0};
  std::atomic<std::uint64_t> finished[2] = {0, 0};
  // Submissions by threads that are not workers which have finished touching
  // the pool (pool::submission): the destructor waits until it matches the
  // spawned total, so no submitter touches a destroyed pool. Written like
  // spawned.
  std::atomic<std::uint64_t> left{0};

  // Any thread; how many job slots this cache has allocated so far.
  [[nodiscard]] std::size_t capacity() const noexcept {
    return capacity_.load(std::memory_order_relaxed);
  }

 private:
  // allocate() once the jobs freed here have run out: the jobs other
  // threads gave back, else a new chunk.
  heap_job* allocate_returned() {
    if (returned_ == nullptr) {
      // Acquire pairs with the release CAS in release_remote().
      returned_ = remote_.exchange(nullptr, std::memory_order_acquire);
      if (returned_ == nullptr) {
        grow();
        return allocate();
      }
    }
    heap_job* j = returned_;
    returned_ = j->next();
    // Each next() would miss the cache in turn: another thread linked the
    // list. Fetching the job named further down now overlaps those misses.
    if (heap_job* further = j->ahead()) __builtin_prefetch(further, 1);
    return j;
  }

  // Links a new chunk into free_. Throws std::bad_alloc, and then leaves
  // the cache as it was.
  void grow();

  void refill_states();

  // Owner only: jobs freed by the owner, and the last list of jobs taken
  // from remote_, whose links carry prefetch hints (heap_job::ahead()).
  heap_job* free_ = nullptr;
  heap_job* returned_ = nullptr;
  std::vector<std::unique_ptr<heap_job[]>> chunks_;
  state_block* state_free_ = nullptr;
  state_slab* slab_ = nullptr;  // made by the first refill_states()
  // Any thread pushes, the owner takes all.
  alignas(cache_line) std::atomic<heap_job*> remote_{nullptr};
  // Written by the owner, read by statistics.
  std::atomic<std::size_t> capacity_{0};
};

inline void job_cache::grow() {
  // Chunks double from 32 up to 4096 jobs (256 KiB), so a small pool stays
  // small and a busy one allocates rarely.
  constexpr std::size_t first_chunk = 32;
  constexpr std::size_t doublings = 7;  // 32 << 7 == 4096
  const std::size_t n = first_chunk << std::min(chunks_.size(), doublings);
  // Both allocations before anything changes, so a std::bad_alloc from
  // either leaves the cache as it was (the push_back below cannot throw).
  chunks_.reserve(chunks_.size() + 1);
  // Default-initialised: the callable storage is not cleared for nothing.
  auto chunk = std::make_unique_for_overwrite<heap_job[]>(n);
  for (std::size_t i = 0; i < n; ++i) {
    chunk[i].home = this;
    chunk[i].set_next(i + 1 < n ? &chunk[i + 1] : nullptr);
  }
  free_ = &chunk[0];
  chunks_.push_back(std::move(chunk));
  capacity_.store(capacity_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

inline void job_cache::refill_states() {
  if (slab_ == nullptr) slab_ = new state_slab;
  state_free_ = slab_->take_returned();
  if (state_free_ == nullptr) state_free_ = slab_->grow();
}

// Where a heap job keeps its callable: inline, or boxed on the heap when it is
// too big, over-aligned or may throw while moving.
template <class C>
C* callable_of(heap_job* j) noexcept {
  if constexpr (fits_inline<C>) {
    return std::launder(reinterpret_cast<C*>(j->storage));
  } else {
    return *std::launder(reinterpret_cast<C**>(j->storage));
  }
}

template <class C, class... Args>
void construct_callable(heap_job* j, Args&&... args) {
  if constexpr (fits_inline<C>) {
    ::new (static_cast<void*>(j->storage)) C(std::forward<Args>(args)...);
  } else {
    ::new (static_cast<void*>(j->storage)) C*(new C(std::forward<Args>(args)...));
  }
}

template <class C>
void destroy_callable(heap_job* j) noexcept {
  if constexpr (fits_inline<C>) {
    callable_of<C>(j)->~C();
  } else {
    delete callable_of<C>(j);
  }
}

// What calling F with Args gives, or not_callable (so that a declaration
// naming it does not fail before the caller's static_assert says why).
struct not_callable {};
template <class F, class... Args>
struct call_result {
  using type = not_callable;
};
template <class F, class... Args>
requires std::is_invocable_v<F, Args...>
struct call_result<F, Args...> {
  using type = std::invoke_result_t<F, Args...>;
};
template <class F, class... Args>
using call_result_t = typename call_result<F, Args...>::type;

// f(args...) as one callable with no parameters, binding like std::async:
// decay-copies now, passes the copies as rvalues when called (once).
template <class F, class... Args>
auto bind_call(F&& f, Args&&... args) {
  return [fn = std::decay_t<F>(std::forward<F>(f)),
          ... bound = std::decay_t<Args>(std::forward<Args>(args))]() mutable -> decltype(auto) {
    return std::invoke(std::move(fn), std::move(bound)...);
  };
}

}  // namespace weft::detail
