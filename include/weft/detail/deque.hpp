// The per-worker work-stealing deque (Chase-Lev), split into a public part that thieves see and a
// private part that only the owner sees.
//
// References:
//   [CL]  D. Chase and Y. Lev. "Dynamic Circular Work-Stealing Deque". SPAA 2005.
//   [LPCZ] N. M. Le, A. Pop, A. Cohen and F. Zappa Nardelli. "Correct and Efficient
//         Work-Stealing for Weak Memory Models". PPoPP 2013.
//
// The owner thread pushes and pops at the bottom end (LIFO); any thread steals at the top end
// (FIFO). The public items are the indices [top, split) of a ring; the private items, all newer
// than those, wait in an array of the owner's beside it. Thieves see only top_, split_ and the
// ring: to them this is the Chase-Lev deque of [LPCZ] with split_ as its bottom. The owner pushes
// an item either public (push, push_many: the private items go to the ring first, and split moves
// past all of them at once) or private (push_private: no atomic store, no fence); private items
// become public when the owner publishes them (moves the oldest into the ring above split, then
// stores split), which it does at a private push that finds the public part empty (see
// push_private). The owner pops a private item with plain loads and stores; once the private part
// is empty, pop() is [LPCZ]'s pop on split_. The algorithm and the memory orders
// are those of [LPCZ] ([LPCZ]'s bottom being split_), with these deviations, each marked
// "deviation N" where it happens:
//   1. No stand-alone fences. [LPCZ] separates the store of bottom from the load of top in pop(),
//      and the load of top from the load of bottom in steal(), with seq_cst fences, and orders the
//      slot write before the store of bottom in push() with a release fence. Here those accesses
//      are seq_cst operations themselves, so the total order S over seq_cst operations gives the
//      same store->load ordering without fences.
//   2. pop() restores split_ with a release store, not a relaxed one. Relaxed is enough under the
//      C11 rule, which [LPCZ] target, that later stores of the same thread continue a release
//      sequence; C++20 removed that rule.
//   3. Buffers replaced by growth are kept on an owner-private list and freed by the destructor
//      (the papers leave their reclamation open). The buffer never shrinks.
//   4. steal() returns nullptr both when the deque is empty and when it lost a race; the papers
//      return distinct EMPTY and ABORT values.
//   5. Indices are signed 64-bit integers as in [CL] ([LPCZ] uses wrapping size_t).
//   6. The private part (after the split deques of Dinan et al., SC 2009, and Lace, van Dijk and
//      van de Pol, Euro-Par 2014, but publishing on the owner's own initiative: thieves never
//      ask). What the thieves see of it is a push_many of its oldest items.
//
// docs/deque.md gives the argument that every pushed item is taken exactly once.
#pragma once

#include <algorithm>
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
  // How many items can be private at once; a private push beyond that publishes the older half.
  static constexpr std::int64_t private_capacity = 256;

  // The capacity is rounded up to a power of two, and to at least 2.
  explicit work_deque(std::size_t initial_capacity = 256)
      : ring_{rounded_capacity(initial_capacity)} {}
  ~work_deque() = default;

  work_deque(const work_deque&) = delete;
  work_deque& operator=(const work_deque&) = delete;

  // Owner only. Doubles the buffer when it is full; throws only std::bad_alloc, and then no item
  // was added. The item is public at once, and so is every private item below it. Without
  // private items, this is push_many(&item, 1) with its loops and their arithmetic left out
  // (spawns from a worker: 3% in bench/fib spawn_wait_until).
  void push(T item) {
    if (private_ != 0) [[unlikely]] {
      push_many(&item, 1);
      return;
    }
    assert(item != nullptr);
    // Relaxed: the owner is the only writer of split_ and of the ring.
    const std::int64_t b = split_.load(std::memory_order_relaxed);
    buffer* const buf = room_for(b, 1);
    // Relaxed: the store of split_ in publish() publishes the slot.
    buf->at(b).store(item, std::memory_order_relaxed);
    publish(b + 1);
  }

  // Owner only. Pushes items[0], ..., items[n - 1] as push() would one by one, but publishes them
  // with a single store of split_ (one seq_cst store instead of n): a task that makes many
  // successors ready hands them over at once. Throws only std::bad_alloc, and then no item was
  // added (the buffer may have grown).
  void push_many(const T* items, std::size_t n) {
    // Relaxed: the owner is the only writer of split_ and of the ring.
    const std::int64_t b = split_.load(std::memory_order_relaxed);
    const std::int64_t p = private_;
    const auto count = static_cast<std::int64_t>(n);
    buffer* const buf = room_for(b, p + count);
    write_oldest(buf, b, p);  // the private items first: they are older
    for (std::int64_t i = 0; i < count; ++i) {
      assert(items[i] != nullptr);
      // Relaxed: the store of split_ below publishes the slots.
      buf->at(b + p + i).store(items[i], std::memory_order_relaxed);
    }
    private_ = 0;
    publish(b + p + count);
  }

  // Owner only. Pushes an item that thieves cannot see yet (deviation 6): plain stores to the
  // owner's array and count and two relaxed loads, no atomic store and no fence, unless the
  // public part is empty. Then this push publishes the older half of the private items (at least
  // this one) and returns true: the caller must then call the pool's new_work(), as after push().
  // A private item stays private while the public part has something for thieves to take; the
  // owner pops it back with plain loads and stores. A push that finds private_capacity items
  // private publishes the older half of them first, and returns true. Throws only std::bad_alloc
  // (the ring could not grow for that), and then no item was added; if the ring cannot grow for
  // a publication when the public part is empty, the items stay private and this returns false.
  // For the owner's fork-join halves and a task_group's spawns, which it almost always takes back
  // itself. Inlined: as a call, it cost a join a third of its time in bench/fib (the call, and
  // the registers it saved).
  [[gnu::always_inline]] bool push_private(T item) {
    assert(item != nullptr);
    const std::int64_t p = private_;
    if (p == private_capacity) [[unlikely]] {
      return push_private_full(item);
    }
    private_items_[p] = item;
    private_ = p + 1;
    // Relaxed: the owner is the only writer of split_; top_ is a hint here (no slot is written).
    // A stale (smaller) t makes the public part look non-empty, and the next private push looks
    // again. Thieves never take beyond split_, so top_ <= s.
    const std::int64_t t = top_.load(std::memory_order_relaxed);
    const std::int64_t s = split_.load(std::memory_order_relaxed);
    if (t < s) [[likely]]
      return false;
    return publish_half();
  }

  // Owner only. Takes the most recently pushed item; nullptr when empty.
  T pop() noexcept {
    if (private_ > 0) return pop_private();
    return pop_public();
  }

  // Owner only. pop() for a caller that expects a private item on top (a join taking its half
  // back): the rest of pop() is a call, which keeps the caller's inlined fast path small.
  T pop_expecting_private() noexcept {
    if (private_ > 0) [[likely]]
      return pop_private();
    return pop_public_out_of_line();
  }

  // Owner only: makes every private item public; false if there was none. The caller must then
  // call the pool's new_work(), as after push(). The pool calls it when the owner takes a job to
  // run (pool::take_own()), so private items outlive only the job that pushed them
  // (docs/deque.md, "Idle workers").
  bool publish_all() noexcept {
    if (private_ == 0) return false;
    return try_publish_oldest(private_);
  }

  // Any thread. Takes the least recently published item. Returns nullptr when the public part is
  // empty and also when another thread took the item first; the caller may retry (deviation 4).
  T steal() noexcept {
    // seq_cst, and seq_cst on the load of split_ just below (deviation 1: [LPCZ] has an acquire
    // load, a seq_cst fence and an acquire load). The pair is the other side of pop_public()'s
    // seq_cst store of split_ followed by its seq_cst load of top_, see there.
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    // The acquire half pairs with whichever store of split_ it reads, all of them release: the
    // seq_cst store in publish(), and pop_public()'s seq_cst store of b and release store of
    // b + 1. The slots below s and the buffer holding them are visible.
    const std::int64_t s = split_.load(std::memory_order_seq_cst);
    if (t >= s) {
      return nullptr;
    }
    // ring_.shared() is an acquire load (not consume) that pairs with the release in grow(), so the
    // copied slots are visible. Loaded after split_, so it is the buffer that was current when the
    // owner stored the value s, or a newer one; each of them holds index t.
    buffer* const buf = ring_.shared();
    // Relaxed: the load of split_ and of the buffer above made the slot's value visible; if the
    // owner has since reused the slot, top_ has moved past t and the claim below fails.
    T item = buf->at(t).load(std::memory_order_relaxed);
    // seq_cst as in [LPCZ]. As a read-modify-write it pairs with every other compare_exchange on
    // top_, so one taker wins each index; its release half pairs with the acquire load of top_
    // in room_for(), so our slot read happens before the owner reuses the slot. Relaxed on
    // failure: the item is not ours and is discarded.
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed)) {
      return nullptr;
    }
    return item;
  }

  // Any thread: whether the public part is empty. seq_cst loads: the load of split_ is the
  // second half of a sleeper's Dekker pair (its seq_cst increment of the sleeper count, then this)
  // against publish()'s seq_cst store of split_ followed by the pusher's load of that count. top_
  // is loaded first, and seq_cst keeps it ordered before the load of split_, so a steal between
  // the two loads can only leave a stale "not empty". Private items are not seen: they belong to
  // a thread that is running a job, and that thread publishes them when it finds the public part
  // empty.
  bool empty() const noexcept {
    const std::int64_t t = top_.load(std::memory_order_seq_cst);
    const std::int64_t s = split_.load(std::memory_order_seq_cst);
    return s <= t;
  }

  // Any thread: the number of public items, a snapshot that may be stale by the time it is
  // returned. Relaxed: callers use it as a hint and get no ordering from it.
  std::size_t size() const noexcept {
    const std::int64_t t = top_.load(std::memory_order_relaxed);
    const std::int64_t s = split_.load(std::memory_order_relaxed);
    return s > t ? static_cast<std::size_t>(s - t) : 0;
  }

  // Owner only: the number of private items.
  std::size_t private_size() const noexcept { return static_cast<std::size_t>(private_); }

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

  // Owner only: the buffer, grown until `count` more items fit above index b.
  buffer* room_for(std::int64_t b, std::int64_t count) {
    buffer* buf = ring_.owned();
    // Acquire: pairs with the successful compare_exchange on top_ in steal() (pop_public()'s is
    // this thread's own). Every write of top_ is a compare_exchange, so each later value is in
    // the release sequence of every earlier one: a load that reads t synchronizes with each claim
    // below t, and every taker's read of a slot below t happens before a push reuses that slot.
    const std::int64_t t = top_.load(std::memory_order_acquire);
    while (b - t + count > buf->capacity()) [[unlikely]] {
        buf = ring_.grow(buf, t, b);
      }
    return buf;
  }

  // Owner only: push_private() when the private items fill their array: the older half of them
  // is published first. Out of line, so that nothing the fast path computes lives across a call
  // (the caller would keep it in registers it must save, in every frame of a recursion).
  [[gnu::noinline]] bool push_private_full(T item) {
    publish_oldest(private_capacity / 2);  // may throw, and then nothing changed
    private_items_[private_] = item;
    ++private_;
    return true;
  }

  // Owner only: pop_public(), as a call (see pop_expecting_private()).
  [[gnu::noinline]] T pop_public_out_of_line() noexcept { return pop_public(); }

  // Owner only: the newest private item (private_ > 0).
  T pop_private() noexcept {
    --private_;
    return private_items_[private_];
  }

  // Owner only: pop() when the private part is empty: [LPCZ]'s pop, on split_.
  T pop_public() noexcept {
    // Relaxed: the owner is the only writer of split_ and of the ring.
    const std::int64_t b = split_.load(std::memory_order_relaxed) - 1;
    buffer* const buf = ring_.owned();
    // seq_cst, together with the seq_cst load of top_ just below (deviation 1: [LPCZ] has a
    // relaxed store, a seq_cst fence and a relaxed load). They pair with steal()'s seq_cst load
    // of top_ followed by its seq_cst load of split_. In S, either this store precedes the
    // thief's load of split_, and the thief sees b (so it does not go for index b) or a later
    // store of ours; or the thief's load of top_ precedes ours, and we see its top_ or a later
    // one (so if it goes for index b, we see t >= b and race it on top_ below).
    split_.store(b, std::memory_order_seq_cst);
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    if (t < b) {
      // More than one item: no thief can reach index b, which is now the owner's.
      // Relaxed: the owner wrote the slot.
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
    // Release (deviation 2: [LPCZ] stores relaxed). It pairs with the seq_cst loads of split_
    // in steal() and empty(): a thief that reads this value also sees every slot the owner wrote
    // before, which C++20 no longer guarantees through the release store in push().
    split_.store(b + 1, std::memory_order_release);
    return item;
  }

  // Owner only: publishes the older half of the private items (the largest pieces of a
  // recursion), rounded up, so at least one; true if it did (false: no memory for the ring to
  // grow, and the items stay private). Out of line: it runs once per steal or so.
  [[gnu::noinline]] bool publish_half() noexcept { return try_publish_oldest((private_ + 1) / 2); }

  // Owner only: moves the k oldest private items (0 < k <= private_) to the ring above split_ and
  // publishes them. Throws only std::bad_alloc (the ring could not grow), and then nothing
  // changed.
  void publish_oldest(std::int64_t k) {
    // Relaxed: the owner is the only writer of split_.
    const std::int64_t s = split_.load(std::memory_order_relaxed);
    write_oldest(room_for(s, k), s, k);
    std::copy(private_items_ + k, private_items_ + private_, private_items_);
    private_ -= k;
    publish(s + k);
  }

  // Owner only: publish_oldest(k), false instead of the exception (the items stay private).
  bool try_publish_oldest(std::int64_t k) noexcept {
    try {
      publish_oldest(k);
      return true;
    } catch (...) {
      return false;
    }
  }

  // Owner only: writes the k oldest private items into buf's slots from index s on (buf has room
  // for them); the caller's store of split_ then publishes them.
  void write_oldest(buffer* buf, std::int64_t s, std::int64_t k) noexcept {
    for (std::int64_t i = 0; i < k; ++i) {
      // Relaxed: published by the caller's store of split_.
      buf->at(s + i).store(private_items_[i], std::memory_order_relaxed);
    }
  }

  // Owner only: makes [top_, s) public.
  void publish(std::int64_t s) noexcept {
    // seq_cst (deviation 1: [LPCZ] has a release fence and a relaxed store). Its release half
    // pairs with the seq_cst loads of split_ in steal(): a thief that sees s sees the slots below
    // it and the buffer they are in. Its seq_cst half is needed by the pool's sleep protocol: this
    // store followed by the pusher's seq_cst load of the sleeper count forms a Dekker pair with a
    // sleeper's seq_cst increment of that count followed by its empty().
    split_.store(s, std::memory_order_seq_cst);
  }

  // The items are the indices [top_, split_ + private_), signed so that split_ - 1 may pass below
  // top_ in pop_public() (deviation 5); [top_, split_) are public, the rest private.
  //
  // Thieves compare_exchange top_; the owner reads it and compare_exchanges it for the last item.
  // It has a cache line to itself, so thieves' claims do not evict the owner's fields. cache_line
  // is a fixed 64 (see config.hpp): std::hardware_destructive_interference_size makes GCC warn
  // that its value is not ABI-stable.
  alignas(cache_line) std::atomic<std::int64_t> top_{0};
  // Written by the owner only; read by every thread.
  alignas(cache_line) std::atomic<std::int64_t> split_{0};
  // The slots (deviation 3: growth retires the old buffers, see ring.hpp).
  growable_ring<T> ring_;
  // Owner only: how many items are private. On split_'s line, which the owner's pushes and pops
  // use anyway. A line of its own measurably changed how the pool's workers and an outside
  // producer share work (bench empty_jobs/2048: smaller batches from the producer's lane, 15%
  // slower), and was no faster for joins.
  std::int64_t private_ = 0;
  // Owner only: the private items, oldest first; thieves never read them. An array of its own
  // rather than slots of the ring above split_: a private push and pop then reach their slot at
  // a fixed place, without the ring's buffer, mask or the public indices (measured in bench/fib).
  T private_items_[private_capacity];
};

}  // namespace weft::detail
