// Visit slots: how a thread that is not a worker waits on a pool's latch while
// another thread destroys the pool, without touching freed memory. And the
// registry of live pools: how a thread holding a future whose job has
// finished tells whether the future's pool still exists.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "config.hpp"

namespace weft::detail {

// A future may outlive its pool, and its get() may run while another thread
// destroys the pool: the pool lives until the job has finished, and not a
// moment longer. A waiter that saw the latch unset cannot tell whether the
// pool still exists by the time it reads the pool's fields. So, before its
// check of the latch, it publishes the pool's address in a slot of its own
// (a slot never freed, so publishing touches no pool), and the destructor,
// once every job has finished, waits until no slot holds its address.
// docs/waiting.md, "A wait racing the pool's destructor", has the argument.
struct alignas(cache_line) visit_slot {
  // Visits nest (a helping waiter's job may wait on another pool's future,
  // a sequential pool's job may run more of them), so a slot holds the pools
  // of the nested visits, innermost last: 8 here, then in further slots
  // chained through `more`, allocated when first needed and kept with the
  // slot. Written by the owner, read by destructors (wait_for_visits()).
  static constexpr std::size_t entries = 8;
  std::atomic<const void*> visiting[entries] = {};
  std::atomic<visit_slot*> more{nullptr};
  std::size_t depth = 0;  // owner only, in the first slot of a chain: entries in use
  // Whether a thread owns the slot; slots are reused, never freed.
  std::atomic<bool> owned{false};
  visit_slot* next = nullptr;  // the list of all first slots; immutable once linked
};

// The calling thread's slot (claimed on first use, given back when the
// thread ends).
visit_slot& my_visit_slot();

// Destructor of the pool at `pool`: returns once no thread visits it.
void wait_for_visits(const void* pool) noexcept;

// Entry i of the chain that starts at `first`, extending the chain as needed.
std::atomic<const void*>& visit_entry(visit_slot& first, std::size_t i);

// Publishes a visit of `pool` for the lifetime of the scope. A pool the
// thread already visits (further out) is not published again: the outer
// visit covers the inner one.
class visit_scope {
 public:
  explicit visit_scope(const void* pool) : slot_(my_visit_slot()) {
    for (std::size_t i = 0; i < slot_.depth; ++i) {
      // Relaxed: only this thread writes the slot.
      if (visit_entry(slot_, i).load(std::memory_order_relaxed) == pool) return;
    }
    entry_ = &visit_entry(slot_, slot_.depth);
    ++slot_.depth;
    // seq_cst: a Dekker pair with the destructor's seq_cst load of the slot
    // in wait_for_visits(). It is ordered before the caller's seq_cst check
    // of the latch (latch::is_set_now()), as the latch's seq_cst set() is
    // before the destructor's load: either the destructor sees the visit,
    // or the check sees the latch set.
    entry_->store(pool, std::memory_order_seq_cst);
  }
  ~visit_scope() {
    if (entry_ == nullptr) return;
    --slot_.depth;
    // Release pairs with the acquire load in wait_for_visits(): every touch
    // of the pool by this visit happens before the destructor goes on.
    entry_->store(nullptr, std::memory_order_release);
  }
  visit_scope(const visit_scope&) = delete;
  visit_scope& operator=(const visit_scope&) = delete;

 private:
  visit_slot& slot_;
  std::atomic<const void*>* entry_ = nullptr;
};

// The registry of live pools. A visit protects a pool only while the job of
// the latch checked after it has not finished; once it has, the pool may be
// gone, and a future that outlived it (then, when_all, when_any on a ready
// future: docs/continuations.md, "A future whose pool is gone") cannot look
// at it to find out. The registry can: every pool is in it, under its
// address and its life number (pool::life(), which a future's state keeps
// too), from its constructor until its destructor begins. One mutex guards
// it; it is taken when a pool is made or destroyed and by a continuation or
// a collection of a future whose job has finished, never on a job's path.

// From the pool's constructor on. Throws std::bad_alloc.
void register_pool(const void* pool, std::uint32_t life);
// First thing in the pool's destructor (after it is registered).
void unregister_pool(const void* pool) noexcept;

// Holds the registry locked for its lifetime: while alive() is true the pool
// is registered and its destructor cannot begin (it blocks in
// unregister_pool()), so the holder may count a job on it, which the
// destructor then waits for. Nothing may lock the registry while holding it.
class live_pool_lock {
 public:
  live_pool_lock(const void* pool, std::uint32_t life);
  [[nodiscard]] bool alive() const noexcept { return alive_; }

 private:
  std::unique_lock<std::mutex> lock_;
  bool alive_ = false;
};

}  // namespace weft::detail
