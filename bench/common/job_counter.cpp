#include "common/job_counter.hpp"

#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

namespace bench {
namespace {

// One counter per live thread, each on its own cache line. Only the owning
// thread writes a counter (relaxed load + store); job_tally_now() reads them
// all with relaxed loads after a synchronising wait, which orders the writes
// it must see. Counters are never reset: a slot that a finished thread gives
// back keeps its count, and the next owner continues from there, so totals
// stay correct across pools that start and stop threads (the registry's
// mutex orders the last store of a slot's old owner before the first load
// of its next one).
struct alignas(64) slot {
  std::atomic<std::uint64_t> count{0};
};

// Benchmark processes start few threads at a time (bench::workers per pool,
// 2 by default, and the TBB and OpenMP runtimes' own); 256 is far above what
// any of them uses at once on the machines this runs on. A thread beyond
// that shares `overflow` through fetch_add.
constexpr std::size_t slot_count = 256;
slot slots[slot_count];
slot overflow;

// Which slots are taken. Never destroyed: threads of the TBB and OpenMP
// runtimes may give their slot back after main() has returned, while static
// objects are being destroyed.
struct slot_registry {
  std::mutex mutex;
  std::size_t used = 0;           // slots ever handed out; guarded by mutex
  std::vector<std::size_t> free;  // slots given back; guarded by mutex
};

slot_registry& registry() {
  static slot_registry* const r = new slot_registry;
  return *r;
}

// `used` as of the latest claim; published with release after the claim,
// read with acquire by job_tally_now() to bound its scan.
std::atomic<std::size_t> slots_published{0};

// Owns the calling thread's slot for the thread's lifetime.
class slot_lease {
 public:
  slot_lease() {
    slot_registry& r = registry();
    std::lock_guard lock(r.mutex);
    if (!r.free.empty()) {
      index_ = r.free.back();
      r.free.pop_back();
    } else if (r.used < slot_count) {
      index_ = r.used++;
      slots_published.store(r.used, std::memory_order_release);
    }
  }
  ~slot_lease() {
    if (index_ == no_slot) return;
    slot_registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.free.push_back(index_);
  }
  slot_lease(const slot_lease&) = delete;
  slot_lease& operator=(const slot_lease&) = delete;

  void add_one() noexcept {
    if (index_ == no_slot) {
      overflow.count.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    auto& c = slots[index_].count;
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  std::uint64_t own_count() const noexcept {
    return index_ == no_slot ? 0 : slots[index_].count.load(std::memory_order_relaxed);
  }

 private:
  static constexpr std::size_t no_slot = slot_count;
  std::size_t index_ = no_slot;
};

slot_lease& this_thread_lease() {
  thread_local slot_lease lease;
  return lease;
}

}  // namespace

void count_job() noexcept { this_thread_lease().add_one(); }

job_tally job_tally_now() {
  job_tally t;
  const std::size_t n = slots_published.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) t.total += slots[i].count.load(std::memory_order_relaxed);
  t.total += overflow.count.load(std::memory_order_relaxed);
  t.on_this_thread = this_thread_lease().own_count();
  return t;
}

}  // namespace bench
