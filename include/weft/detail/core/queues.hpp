// A part of the pool's core (docs/design.md, "The core's parts"): the queues
// through which jobs reach the workers from threads that are not workers,
// and a sequential pool's one queue. An outside thread pushes to its own
// lane (lock-free, one producer) or, when every lane is taken, to the
// shared injector; a sequential pool (threads = 0) keeps every job in one
// FIFO that its waiters run in submission order. The workers' own deques
// are in their slots (detail::roster); the priority queues and mailboxes in
// detail::attention. Each queue's seq_cst publication is one half of the
// sleep protocol's pairs (docs/sleep.md); outside_empty() holds the other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "../injector.hpp"
#include "../job.hpp"
#include "../lane.hpp"

namespace weft::detail {

class queues {
 public:
  queues() = default;
  queues(const queues&) = delete;
  queues& operator=(const queues&) = delete;

  // The calling (outside) thread's lane into pool `pool_id`, or nullptr when
  // all lanes are taken and the injector has to serve.
  lane* my_lane(std::uint64_t pool_id) {
    const lane_cache_entry& cached = tls_lane;
    if (cached.pool_id == pool_id) return cached.bound;
    return thread_lane(pool_id, lanes_);
  }
  [[nodiscard]] const lane_set& lanes() const noexcept { return *lanes_; }
  // The injector: the queue shared by outside threads without a lane, and
  // where jobs go that any worker may run (requeued, rescued, purged).
  [[nodiscard]] injector& shared_queue() noexcept { return injector_; }
  [[nodiscard]] const injector& shared_queue() const noexcept { return injector_; }
  // Whether the injector and every lane are empty: seq_cst loads (the
  // queues' size hints), the other half of their producers' pairs.
  [[nodiscard]] bool outside_empty() const noexcept {
    if (!injector_.empty()) return false;
    const lane_set& all = *lanes_;
    for (std::size_t i = 0, n = all.size(); i < n; ++i) {
      if (!all[i].queue.empty()) return false;
    }
    return true;
  }

  // A sequential pool's FIFO, guarded by its mutex (any thread may submit,
  // any waiter runs). push: throws only std::bad_alloc, and then nothing
  // was added.
  void push_sequential(job* const* jobs, std::size_t n) {
    std::lock_guard lock{sequential_mutex_};
    sequential_.insert(sequential_.end(), jobs, jobs + n);
  }
  // The oldest job, or nullptr.
  job* pop_sequential() {
    std::lock_guard lock{sequential_mutex_};
    if (sequential_.empty()) return nullptr;
    job* j = sequential_.front();
    sequential_.pop_front();
    return j;
  }
  // Every job queued now, oldest first, for purge() to sort.
  std::deque<job*> take_sequential() {
    std::deque<job*> taken;
    std::lock_guard lock{sequential_mutex_};
    taken.swap(sequential_);
    return taken;
  }
  // Puts back what purge() kept, ahead of what was queued meanwhile.
  // Throws only std::bad_alloc.
  void put_back_sequential(const std::deque<job*>& kept) {
    std::lock_guard lock{sequential_mutex_};
    sequential_.insert(sequential_.begin(), kept.begin(), kept.end());
  }

 private:
  std::shared_ptr<lane_set> lanes_ = std::make_shared<lane_set>();
  injector injector_;
  std::mutex sequential_mutex_;
  std::deque<job*> sequential_;
};

}  // namespace weft::detail
