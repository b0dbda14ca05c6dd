#include "weft/detail/latch.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <thread>
#include <utility>

namespace weft::detail {

namespace {

// A waiter for one timed wait, owned jointly by the latch (until it notifies)
// and by the waiting thread's cache (until the thread replaces it or ends).
struct timed_waiter final : latch_waiter {
  std::mutex mutex;
  std::condition_variable cv;
  bool notified = false;       // under mutex
  const latch* on = nullptr;   // the latch it is subscribed to (owner only)
  std::atomic<int> owners{2};  // the latch's notification and the cache

  static void release(timed_waiter* w) noexcept {
    // acq_rel: the last owner sees the other's last use before deleting.
    if (w->owners.fetch_sub(1, std::memory_order_acq_rel) == 1) delete w;
  }

  static void wake(latch_waiter* base) noexcept {
    auto* w = static_cast<timed_waiter*>(base);
    {
      std::lock_guard lock{w->mutex};
      w->notified = true;
      w->cv.notify_one();
    }
    release(w);
  }
};

// The calling thread's waiters still subscribed to unset latches (a few, for
// a loop that polls several futures with timeouts); given up at thread end.
class waiter_cache {
 public:
  waiter_cache() = default;
  waiter_cache(const waiter_cache&) = delete;
  waiter_cache& operator=(const waiter_cache&) = delete;
  ~waiter_cache() {
    for (timed_waiter*& w : slots_) {
      if (w != nullptr) timed_waiter::release(std::exchange(w, nullptr));
    }
  }

  // A waiter subscribed to l and not yet notified, or nullptr.
  timed_waiter* find(const latch* l) noexcept {
    for (timed_waiter* w : slots_) {
      if (w == nullptr || w->on != l) continue;
      std::lock_guard lock{w->mutex};
      if (!w->notified) return w;
    }
    return nullptr;
  }

  // Keeps w (one of its owners), giving up the oldest kept waiter if full.
  void keep(timed_waiter* w) noexcept {
    if (slots_[next_] != nullptr) timed_waiter::release(slots_[next_]);
    slots_[next_] = w;
    next_ = (next_ + 1) % slots_.size();
  }

 private:
  std::array<timed_waiter*, 8> slots_{};
  std::size_t next_ = 0;
};

}  // namespace

bool latch::block_until(std::chrono::steady_clock::time_point deadline) {
  waiter_cache& cache = platform::per_thread<waiter_cache>();
  timed_waiter* w = cache.find(this);
  if (w == nullptr) {
    w = new timed_waiter;
    w->notify = &timed_waiter::wake;
    w->on = this;
    if (!subscribe(w)) {
      delete w;  // set meanwhile: the latch never saw it
      return true;
    }
    cache.keep(w);
  }
  std::unique_lock lock{w->mutex};
  return w->cv.wait_until(lock, deadline, [w] { return w->notified; });
}

void latch::nap_until(std::chrono::steady_clock::time_point deadline) noexcept {
  try {
    (void)block_until(deadline);
  } catch (...) {  // std::bad_alloc from the waiter, std::system_error from the lock
    std::this_thread::sleep_until(deadline);
  }
}

}  // namespace weft::detail
