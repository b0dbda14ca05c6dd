// A part of the pool's core (docs/design.md, "The core's parts"): who works
// for the pool. The worker slots (one per worker pool_options::max_threads
// allows), how many of them run (size), which of them are to leave
// (target) and whose deques thieves scan (active), and what starting and
// stopping a worker calls (pinning CPUs, the hooks). The counts change only
// under resize_mutex() (pool::resize(), src/control.cpp). Both halves of the
// shrink's pairs are here: shrink_to()'s seq_cst stores against a sleeping
// worker's leaving(seq_cst) and a mailbox sender's size(seq_cst).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "../config.hpp"
#include "../context.hpp"

namespace weft::detail {

class roster {
 public:
  using hook = std::function<void(std::size_t)>;
  using slot_list = std::vector<std::unique_ptr<worker>>;

  roster(std::vector<int> cpus, hook on_start, hook on_stop)
      : on_stop_(std::move(on_stop)), cpus_(std::move(cpus)), on_start_(std::move(on_start)) {}
  roster(const roster&) = delete;
  roster& operator=(const roster&) = delete;

  // Makes every slot, each with room for `batch` jobs taken at once; the
  // pool's constructor, before any thread starts. The slots are never
  // moved or freed before the destructor, so any thread may read any slot.
  void make_slots(std::size_t slots, std::size_t batch);
  // Sets the counts for the workers the constructor starts. Relaxed: the
  // threads start after these stores.
  void start_with(std::size_t n) noexcept {
    size_.store(n, std::memory_order_relaxed);
    target_.store(n, std::memory_order_relaxed);
    active_.store(n, std::memory_order_relaxed);
  }

  // How many slots there are (pool::max_size()); 0 for a sequential pool.
  [[nodiscard]] std::size_t slots() const noexcept { return slots_.size(); }
  [[nodiscard]] worker& operator[](std::size_t i) const noexcept { return *slots_[i]; }
  [[nodiscard]] const slot_list& all() const noexcept { return slots_; }

  // How many workers run (pool::size()). Relaxed by default: a snapshot;
  // resize() orders its own steps. seq_cst for a mailbox's sender, the
  // other half of shrink_to()'s pair.
  [[nodiscard]] std::size_t size(
      std::memory_order order = std::memory_order_relaxed) const noexcept {
    return size_.load(order);
  }
  // The deques thieves scan: size() plus, during a shrink, the leaving
  // workers' until they are gone. Relaxed: a thief that reads it late
  // misses only new, empty deques, or scans a leaver's empty one.
  [[nodiscard]] std::size_t active() const noexcept {
    return active_.load(std::memory_order_relaxed);
  }
  // Whether worker w is to leave at its next look for work. seq_cst for a
  // worker's last look before it sleeps, the other half of shrink_to()'s
  // store of the target.
  [[nodiscard]] bool leaving(const worker& w,
                             std::memory_order order = std::memory_order_relaxed) const noexcept {
    return w.index >= target_.load(order);
  }

  // Growing to n workers, before their threads start: they are scanned and
  // stay. Relaxed: the new threads start after these stores, and a thief
  // that reads active_ late misses only new, empty deques.
  void grow_to(std::size_t n) noexcept {
    target_.store(n, std::memory_order_relaxed);
    active_.store(n, std::memory_order_relaxed);
  }
  // After the new threads started: spawn_on(i) for one of them needs only
  // to see i < size(). Relaxed.
  void grown_to(std::size_t n) noexcept { size_.store(n, std::memory_order_relaxed); }
  // Shrinking to n: workers from n up are to leave. seq_cst: the target is
  // a Dekker pair with leaving(seq_cst) after a worker's
  // sleep_controller::prepare() (either it sees that it leaves, or the
  // caller's wake_sleepers() sees it asleep); the size one with a mailbox
  // sender's size(seq_cst) (either it finds the leaver gone and moves its
  // job, or the shrink's look at the leavers' mailboxes finds the job).
  void shrink_to(std::size_t n) noexcept {
    target_.store(n, std::memory_order_seq_cst);
    size_.store(n, std::memory_order_seq_cst);
  }
  // The leavers' threads have ended and their deques are empty. Relaxed: a
  // thief that still scans them finds nothing.
  void shrunk_to(std::size_t n) noexcept { active_.store(n, std::memory_order_relaxed); }
  // Serialises resize(); guards the workers' std::thread objects.
  std::mutex& resize_mutex() noexcept { return resize_mutex_; }

  // What starting and stopping a worker needs (pool_options::cpus,
  // on_worker_start, on_worker_stop).
  [[nodiscard]] const std::vector<int>& cpus() const noexcept { return cpus_; }
  [[nodiscard]] const hook& on_start() const noexcept { return on_start_; }
  [[nodiscard]] const hook& on_stop() const noexcept { return on_stop_; }

 private:
  hook on_stop_;
  slot_list slots_;
  const std::vector<int> cpus_;
  hook on_start_;
  // Read often, written rarely: a line of their own.
  alignas(cache_line) std::atomic<std::size_t> size_{0};
  std::atomic<std::size_t> target_{0};
  std::atomic<std::size_t> active_{0};
  std::mutex resize_mutex_;
};

}  // namespace weft::detail
