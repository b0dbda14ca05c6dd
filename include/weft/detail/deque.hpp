// The per-worker work-stealing deque (Chase-Lev).
//
// References:
//   [CL]  D. Chase and Y. Lev. "Dynamic Circular Work-Stealing Deque". SPAA 2005.
//   [LPCZ] N. M. Le, A. Pop, A. Cohen and F. Zappa Nardelli. "Correct and Efficient
//         Work-Stealing for Weak Memory Models". PPoPP 2013.
//
// The owner thread pushes and pops at the bottom end (LIFO); any thread steals at the top end
// (FIFO). The algorithm and the memory orders are those of [LPCZ], with these deviations, each
// marked "deviation N" where it happens:
//   1. No stand-alone fences. [LPCZ] separates the store of bottom from the load of top in pop(),
//      and the load of top from the load of bottom in steal(), with seq_cst fences, and orders the
//      slot write before the store of bottom in push() with a release fence. Here those accesses
//      are seq_cst operations themselves, so the total order S over seq_cst operations gives the
//      same store->load ordering without fences.
//   2. pop() restores bottom with a release store, not a relaxed one. Relaxed is enough under the
//      C11 rule, which [LPCZ] target, that later stores of the same thread continue a release
//      sequence; C++20 removed that rule.
//   3. Buffers replaced by growth are kept on an owner-private list and freed by the destructor
//      (the papers leave their reclamation open). The buffer never shrinks.
//   4. steal() returns nullptr both when the deque is empty and when it lost a race; the papers
//      return distinct EMPTY and ABORT values.
//   5. Indices are signed 64-bit integers as in [CL] ([LPCZ] uses wrapping size_t).
//
// docs/deque.md gives the argument that every pushed item is taken exactly once.
#pragma once

#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <weft/detail/config.hpp>
#include <weft/detail/ring.hpp>

namespace weft::detail {

// A work-stealing deque of pointers. nullptr is never pushed: it is the "nothing taken" result.
template <class T>
class work_deque {
  static_assert(std::is_pointer_v<T>, "work_deque holds pointers");
  static_assert(std::atomic<T>::is_always_lock_free);
  static_assert(std::atomic<std::int64_t>::is_always_lock_free);

 public:
  // The capacity is rounded up to a power of two, and to at least 2.
  explicit work_deque(std::size_t initial_capacity = 256)
      : ring_{rounded_capacity(initial_capacity)} {}
  ~work_deque() = default;

  work_deque(const work_deque&) = delete;
  work_deque& operator=(const work_deque&) = delete;

  // Owner only. Doubles the buffer when it is full; throws only std::bad_alloc, and then no item
  // was added.
  void push(T item) { push_many(&item, 1); }

  // Owner only. Pushes items[0], ..., items[n - 1] as push() would one by one, but publishes them
  // with a single store of bottom_ (one seq_cst store instead of n): a task that makes many
  // successors ready hands them over at once. Throws only std::bad_alloc, and then no item was
  // added (the buffer may have grown).
  void push_many(const T* items, std::size_t n) {
    // Relaxed: the owner is the only writer of bottom_ and of the ring.
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);
    buffer* buf = ring_.owned();
    // Acquire: pairs with the successful compare_exchange on top_ in steal() and pop(). Every
    // taker's read of a slot below t happens before this push reuses that slot.
    const std::int64_t t = top_.load(std::memory_order_acquire);
    const auto count = static_cast<std::int64_t>(n);
    while (b - t + count > buf->capacity()) {
      buf = ring_.grow(buf, t, b);
    }
    for (std::int64_t i = 0; i < count; ++i) {
      assert(items[i] != nullptr);
      // Relaxed: the store of bottom_ below publishes the slots.
      buf->at(b + i).store(items[i], std::memory_order_relaxed);
    }
    // seq_cst (deviation 1: [LPCZ] has a release fence and a relaxed store). Its release half
    // pairs with the seq_cst loads of bottom_ in steal(): a thief that sees b + count sees the
    // slots and the buffer they are in. Its seq_cst half is needed by the pool's sleep protocol:
    // this store followed by the pusher's seq_cst load of the sleeper count forms a Dekker pair
    // with a sleeper's seq_cst increment of that count followed by its empty().
    bottom_.store(b + count, std::memory_order_seq_cst);
  }

  // Owner only. Takes the most recently pushed item; nullptr when empty.
  T pop() noexcept {
    // Relaxed: the owner is the only writer of bottom_ and of the ring.
    const std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    buffer* const buf = ring_.owned();
    // seq_cst, together with the seq_cst load of top_ just below (deviation 1: [LPCZ] has a
    // relaxed store, a seq_cst fence and a relaxed load). They pair with steal()'s seq_cst load
    // of top_ followed by its seq_cst load of bottom_. In S, either this store precedes the
    // thief's load of bottom_, and the thief sees b (so it does not go for index b) or a later
    // store of ours; or the thief's load of top_ precedes ours, and we see its top_ or a later
    // one (so if it goes for index b, we see t >= b and race it on top_ below).
    bottom_.store(b, std::memory_order_seq_cst);
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    if (t < b) {
      // More than one item: no thief can reach index b. Relaxed: the owner wrote the slot.
      return buf->at(b).load(std::memory_order_relaxed);
    }
    T item = nullptr;
    // One item left (t == b): race the thieves for it on top_. seq_cst as in [LPCZ]. It pairs
    // with the thieves' compare_exchange on top_: as read-modify-writes, at most one of them
    // moves top_ from b to b + 1. Relaxed on failure: the loser only needs to know it lost.
    if (t == b && top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                               std::memory_order_relaxed)) {
      // Relaxed: the owner wrote the slot, and only the owner writes slots.
      item = buf->at(b).load(std::memory_order_relaxed);
    }
    // The deque is empty now (top_ >= b + 1 whichever branch we took): undo the decrement.
    // Release (deviation 2: [LPCZ] stores relaxed). It pairs with the seq_cst loads of bottom_
    // in steal() and empty(): a thief that reads this value also sees every slot the owner wrote
    // before, which C++20 no longer guarantees through the release store in push().
    bottom_.store(b + 1, std::memory_order_release);
    return item;
  }

  // Any thread. Takes the least recently pushed item. Returns nullptr when the deque is empty and
  // also when another thread took the item first; the caller may retry (deviation 4).
  T steal() noexcept {
    // seq_cst, and seq_cst on the load of bottom_ just below (deviation 1: [LPCZ] has an acquire
    // load, a seq_cst fence and an acquire load). The pair is the other side of pop()'s seq_cst
    // store of bottom_ followed by its seq_cst load of top_, see there.
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    // The acquire half pairs with the seq_cst store of bottom_ in push() and the release store in
    // pop(): the slots below b and the buffer holding them are visible.
    const std::int64_t b = bottom_.load(std::memory_order_seq_cst);
    if (t >= b) {
      return nullptr;
    }
    // ring_.shared() is an acquire load (not consume) that pairs with the release in grow(), so the
    // copied slots are visible. Loaded after bottom_, so it is the buffer that was current when the
    // owner stored the value b, or a newer one; each of them holds index t.
    buffer* const buf = ring_.shared();
    // Relaxed: the load of bottom_ and of the buffer above made the slot's value visible; if the
    // owner has since reused the slot, top_ has moved past t and the claim below fails.
    T item = buf->at(t).load(std::memory_order_relaxed);
    // seq_cst as in [LPCZ]. As a read-modify-write it pairs with every other compare_exchange on
    // top_, so one taker wins each index; its release half pairs with the acquire load of top_
    // in push(), so our slot read happens before the owner reuses the slot. Relaxed on failure:
    // the item is not ours and is discarded.
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed)) {
      return nullptr;
    }
    return item;
  }

  // Any thread. seq_cst loads: the load of bottom_ is the second half of a sleeper's Dekker pair
  // (its seq_cst increment of the sleeper count, then this) against push()'s seq_cst store of
  // bottom_ followed by the pusher's load of that count. top_ is loaded first, and seq_cst keeps
  // it ordered before the load of bottom_, so a steal between the two loads can only leave a
  // stale "not empty".
  bool empty() const noexcept {
    const std::int64_t t = top_.load(std::memory_order_seq_cst);
    const std::int64_t b = bottom_.load(std::memory_order_seq_cst);
    return b <= t;
  }

  // Any thread. A snapshot that may be stale by the time it is returned. Relaxed: callers use it
  // as a hint and get no ordering from it.
  std::size_t size() const noexcept {
    const std::int64_t t = top_.load(std::memory_order_relaxed);
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);
    return b > t ? static_cast<std::size_t>(b - t) : 0;
  }

  // Owner only.
  std::size_t capacity() const noexcept {
    return static_cast<std::size_t>(ring_.owned()->capacity());
  }

 private:
  using buffer = typename growable_ring<T>::buffer;

  static std::int64_t rounded_capacity(std::size_t requested) {
    // No allocation of this many slots can succeed; report it the way operator new would.
    if (requested > (std::size_t{1} << 62)) {
      throw std::bad_array_new_length{};
    }
    return static_cast<std::int64_t>(std::bit_ceil(requested < 2 ? std::size_t{2} : requested));
  }

  // The live items are the indices [top_, bottom_), signed so that bottom_ - 1 may pass below
  // top_ in pop() (deviation 5).
  //
  // Thieves compare_exchange top_; the owner reads it and compare_exchanges it for the last item.
  // It has a cache line to itself, so thieves' claims do not evict the owner's fields. cache_line
  // is a fixed 64 (see config.hpp): std::hardware_destructive_interference_size makes GCC warn
  // that its value is not ABI-stable.
  alignas(cache_line) std::atomic<std::int64_t> top_{0};
  // Written by the owner only; read by every thread.
  alignas(cache_line) std::atomic<std::int64_t> bottom_{0};
  // The slots (deviation 3: growth retires the old buffers, see ring.hpp).
  growable_ring<T> ring_;
};

}  // namespace weft::detail
