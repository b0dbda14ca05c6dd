#include "weft/detail/visit.hpp"

#include <algorithm>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "weft/detail/platform.hpp"

namespace weft::detail {

namespace {

// Every slot ever made, newest first. Slots are never freed, so a destructor
// may walk the list while threads claim, use and give back slots.
constinit std::atomic<visit_slot*> all_slots{nullptr};

visit_slot& claim_slot() {
  // Acquire pairs with the release CAS below: a slot's next is set.
  for (visit_slot* s = all_slots.load(std::memory_order_acquire); s != nullptr; s = s->next) {
    bool expected = false;
    // Acquire pairs with the release store in ~owner(): the previous
    // owner's last visit ended before ours begins.
    if (!s->owned.load(std::memory_order_relaxed) &&
        s->owned.compare_exchange_strong(expected, true, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
      return *s;
    }
  }
  auto* s = new visit_slot;                         // never freed (see all_slots)
  s->owned.store(true, std::memory_order_relaxed);  // not visible to anyone yet
  visit_slot* head = all_slots.load(std::memory_order_relaxed);
  do {
    s->next = head;
    // Release pairs with the acquire loads of all_slots: whoever finds the
    // slot sees it built.
  } while (!all_slots.compare_exchange_weak(head, s, std::memory_order_release,
                                            std::memory_order_relaxed));
  return *s;
}

// The calling thread's slot; nullptr until its first visit.
constinit thread_local visit_slot* my_slot = nullptr;
// Set once the thread's slot was given back at its end. A thread_local
// destructor that waits on a pool after that claims a slot again, which is
// then never given back (one slot per such thread, reused by nobody).
constinit thread_local bool given_back = false;

// Gives the calling thread's slot back when the thread ends. It keeps the
// slot itself rather than read my_slot: under MinGW a thread's other
// thread_locals read as new (zero) by the time this runs
// (platform::per_thread).
struct slot_return {
  visit_slot* slot = nullptr;
  slot_return() = default;
  slot_return(const slot_return&) = delete;
  slot_return& operator=(const slot_return&) = delete;
  ~slot_return() {
    given_back = true;
    my_slot = nullptr;
    if (slot == nullptr) return;  // claim_slot() threw
    // Release pairs with the acquire CAS in claim_slot(): the next owner
    // starts after our last visit.
    slot->owned.store(false, std::memory_order_release);
  }
};

// The registry of live pools (visit.hpp). Never destroyed: a static pool's
// destructor may run after this file's statics would have been.
struct live_pool {
  const void* pool;
  std::uint32_t life;
};
struct pool_registry {
  std::mutex mutex;
  std::vector<live_pool> pools;
};
pool_registry& registry() {
  static auto* r = new pool_registry;  // never freed (see above)
  return *r;
}

}  // namespace

void register_pool(const void* pool, std::uint32_t life) {
  pool_registry& r = registry();
  const std::lock_guard lock{r.mutex};
  r.pools.push_back({pool, life});
}

void unregister_pool(const void* pool) noexcept {
  pool_registry& r = registry();
  const std::lock_guard lock{r.mutex};
  // An address is in the registry at most once: a pool there is alive.
  const auto it = std::find_if(r.pools.begin(), r.pools.end(),
                               [pool](const live_pool& p) { return p.pool == pool; });
  if (it == r.pools.end()) return;
  *it = r.pools.back();
  r.pools.pop_back();
}

live_pool_lock::live_pool_lock(const void* pool, std::uint32_t life) : lock_(registry().mutex) {
  const std::vector<live_pool>& pools = registry().pools;
  alive_ = std::any_of(pools.begin(), pools.end(), [pool, life](const live_pool& p) {
    return p.pool == pool && p.life == life;
  });
}

visit_slot& my_visit_slot() {
  if (my_slot != nullptr) return *my_slot;
  // Built on the thread's first visit, before the slot is claimed: on
  // Windows building it allocates, and a bad_alloc then leaves no slot
  // claimed that nothing would give back. platform::per_thread, so that it
  // is not in MinGW's emulated TLS, freed before it is destroyed.
  slot_return* on_exit = given_back ? nullptr : &platform::per_thread<slot_return>();
  my_slot = &claim_slot();
  if (on_exit != nullptr) on_exit->slot = my_slot;
  return *my_slot;
}

std::atomic<const void*>& visit_entry(visit_slot& first, std::size_t i) {
  visit_slot* s = &first;
  for (; i >= visit_slot::entries; i -= visit_slot::entries) {
    // Relaxed: only the owner links chunks.
    visit_slot* more = s->more.load(std::memory_order_relaxed);
    if (more == nullptr) {
      more = new visit_slot;  // kept with the slot, never freed
      // seq_cst: before the entry's own seq_cst store, so a destructor that
      // misses the chunk (its seq_cst load in wait_for_visits()) is before
      // that store too, and the Dekker pair of visit_scope holds.
      s->more.store(more, std::memory_order_seq_cst);
    }
    s = more;
  }
  return s->visiting[i];
}

void wait_for_visits(const void* pool) noexcept {
  // Acquire pairs with the release CAS in claim_slot().
  for (visit_slot* s = all_slots.load(std::memory_order_acquire); s != nullptr; s = s->next) {
    // seq_cst: see visit_entry().
    for (visit_slot* c = s; c != nullptr; c = c->more.load(std::memory_order_seq_cst)) {
      for (const auto& entry : c->visiting) {
        // seq_cst: see visit_scope's constructor; its acquire half pairs
        // with the release store in ~visit_scope().
        while (entry.load(std::memory_order_seq_cst) == pool) std::this_thread::yield();
      }
    }
  }
}

}  // namespace weft::detail
