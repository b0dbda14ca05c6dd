#include "weft/detail/lane.hpp"

#include <vector>

#include "weft/detail/platform.hpp"

namespace weft::detail {

lane* lane_set::bind() {
  const std::size_t n = size();
  for (std::size_t i = 0; i < n; ++i) {
    bool expected = false;
    // Acquire pairs with the release store in ~bindings(): the previous
    // thread's pushes and cache use happen before ours.
    if (lanes_[i]->bound.compare_exchange_strong(expected, true, std::memory_order_acquire,
                                                 std::memory_order_relaxed)) {
      return lanes_[i].get();
    }
  }
  std::lock_guard lock{mutex_};
  const std::size_t i = count_.load(std::memory_order_relaxed);
  if (i == max_lanes) return nullptr;
  lanes_[i] = std::make_unique<lane>();
  lanes_[i]->bound.store(true, std::memory_order_relaxed);  // not visible to anyone yet
  // seq_cst pairs with the seq_cst load in size(): whoever sees the new
  // count sees the lane built, and the store precedes this thread's first
  // push into the lane in the total order, so a sleeper's re-check that
  // comes after that push in the order reads this count or a later one.
  count_.store(i + 1, std::memory_order_seq_cst);
  return lanes_[i].get();
}

namespace {

// Set when the calling thread's bindings have been released at its exit:
// from then on (a thread_local destructor that submits) it has no lane and
// submits through the injector.
constinit thread_local bool lanes_released = false;

// The lanes the calling thread is bound to; released when the thread ends.
class bindings {
 public:
  bindings() = default;
  bindings(const bindings&) = delete;
  bindings& operator=(const bindings&) = delete;
  ~bindings() {
    // No cached lane may be used once it can be bound to another thread.
    lanes_released = true;
    tls_lane = lane_cache_entry{};
    for (const binding& b : list_) {
      // A pool that is gone took its lanes with it: nothing to release.
      if (const std::shared_ptr<lane_set> alive = b.lanes.lock()) {
        // Release pairs with the acquire CAS in lane_set::bind().
        b.bound->bound.store(false, std::memory_order_release);
      }
    }
  }

  lane* find_or_bind(std::uint64_t pool_id, const std::shared_ptr<lane_set>& lanes) {
    for (const binding& b : list_) {
      if (b.pool_id == pool_id) return b.bound;
    }
    // Forget pools that are gone, so the list does not grow with every pool
    // this thread ever used.
    std::erase_if(list_, [](const binding& b) { return b.lanes.expired(); });
    // Room first: a lane bound and then not recorded would never be freed.
    list_.reserve(list_.size() + 1);
    lane* l = lanes->bind();
    if (l != nullptr) list_.push_back(binding{pool_id, l, lanes});
    return l;
  }

 private:
  struct binding {
    std::uint64_t pool_id;
    lane* bound;
    std::weak_ptr<lane_set> lanes;
  };
  std::vector<binding> list_;
};

}  // namespace

lane* thread_lane(std::uint64_t pool_id, const std::shared_ptr<lane_set>& lanes) {
  if (lanes_released) return nullptr;
  // platform::per_thread: not in MinGW's emulated TLS, which is freed
  // before the destructor runs.
  lane* l = platform::per_thread<bindings>().find_or_bind(pool_id, lanes);
  tls_lane = lane_cache_entry{pool_id, l};
  return l;
}

}  // namespace weft::detail
