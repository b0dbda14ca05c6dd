// Private to src/flow/: what the flow's translation units share beyond
// include/weft/flow.hpp: the unfinished_ word's bits, the producer's view
// of every object, dump()'s records, and make_ready() / queue(), which both
// the producer and the running tasks call per task (inline in each).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "weft/detail/scheduler.hpp"
#include "weft/flow.hpp"

namespace weft::detail {

// unfinished_: the count in the low bits; a producer blocked until the
// count is zero, or at most the window's low mark, sets one of the top bits.
// The cancel request lives in the same word, so that cancel() sets it only
// while tasks are unfinished (and wait(), which sees them finish, clears
// it): a cancel never reaches tasks emplaced after the next wait().
inline constexpr std::uint64_t zero_bit = std::uint64_t{1} << 63;
inline constexpr std::uint64_t low_bit = std::uint64_t{1} << 62;
inline constexpr std::uint64_t wish_bits = zero_bit | low_bit;
inline constexpr std::uint64_t cancel_bit = std::uint64_t{1} << 61;
inline constexpr std::uint64_t count_mask = cancel_bit - 1;

// status_ bits.
inline constexpr unsigned failed_bit = 2;

inline bool is_group_mode(access_mode m) noexcept { return m != access_mode::write; }

// ---------------------------------------------------------------------------
// The producer's view of every object: which tasks form its current segment
// (one writer, or a run of same-mode group accesses) and which the previous.

struct object_state {
  const void* object = nullptr;
  access_mode kind = access_mode::write;
  bool used = false;  // no access yet (kind is meaningless)
  std::vector<node_ref> current;
  std::vector<node_ref> previous;
  node_ref last;  // the newest task that accessed it
  reduction_base* reduction = nullptr;
  reduction_base* (*reduction_kind)(void*, const void*, std::size_t) = nullptr;
  commute_lock* lock = nullptr;
};

inline bool finished(const node_ref& r) noexcept {
  // The producer is the only one that reuses nodes, so a node whose
  // generation moved on has finished. Acquire pairs with the release store
  // of `done` in execute().
  return r.node->generation != r.generation ||
         r.node->phase.load(std::memory_order_acquire) == flow_node::done;
}

inline void drop_finished(std::vector<node_ref>& refs) {
  refs.erase(std::remove_if(refs.begin(), refs.end(), finished), refs.end());
}

// Open addressing with linear probing over object addresses; the states live
// in a vector of their own that keeps its capacity.
class flow_core::object_table {
 public:
  object_table() { slots_.assign(64, empty); }

  object_state& find_or_add(const void* object) {
    std::size_t i = home(object);
    for (;;) {
      const std::uint32_t s = slots_[i];
      if (s == empty) break;
      if (states_[s].object == object) return states_[s];
      i = (i + 1) & (slots_.size() - 1);
    }
    if ((used_ + 1) * 2 > slots_.size()) {
      grow();
      return find_or_add(object);
    }
    if (used_ == states_.size()) {
      // A new slot: room for a run of accesses, kept across reuse (slots
      // are handed out again in a different order after wait()).
      states_.emplace_back();
      states_.back().current.reserve(reserved_run);
      states_.back().previous.reserve(reserved_run);
    }
    object_state& st = states_[used_];
    st.object = object;
    st.used = false;
    st.current.clear();
    st.previous.clear();
    st.last = node_ref{};
    st.reduction = nullptr;
    st.reduction_kind = nullptr;
    st.lock = nullptr;
    slots_[i] = static_cast<std::uint32_t>(used_);
    ++used_;
    return st;
  }

  object_state* find(const void* object) noexcept {
    std::size_t i = home(object);
    for (;;) {
      const std::uint32_t s = slots_[i];
      if (s == empty) return nullptr;
      if (states_[s].object == object) return &states_[s];
      i = (i + 1) & (slots_.size() - 1);
    }
  }

  [[nodiscard]] std::size_t size() const noexcept { return used_; }

  template <class F>
  void for_each(F&& f) {
    for (std::size_t i = 0; i < used_; ++i) f(states_[i]);
  }

  void clear() noexcept {
    std::fill(slots_.begin(), slots_.end(), empty);
    used_ = 0;
  }

  // Forgets objects whose every access has finished (and that hold no
  // reduction still to combine): their next access needs no edge.
  // Their commute locks are idle then: they go to `idle_locks`.
  void purge(std::vector<commute_lock*>& idle_locks) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < used_; ++i) {
      object_state& st = states_[i];
      drop_finished(st.current);
      if (st.current.empty() && st.reduction == nullptr) {
        if (st.lock != nullptr) idle_locks.push_back(std::exchange(st.lock, nullptr));
        continue;
      }
      if (kept != i) std::swap(states_[kept], st);
      ++kept;
    }
    used_ = kept;
    rehash(slots_.size());
  }

 private:
  static constexpr std::uint32_t empty = static_cast<std::uint32_t>(-1);
  static constexpr std::size_t reserved_run = 16;

  [[nodiscard]] std::size_t home(const void* object) const noexcept {
    auto h = reinterpret_cast<std::uintptr_t>(object);
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 32;
    return static_cast<std::size_t>(h) & (slots_.size() - 1);
  }

  void grow() { rehash(slots_.size() * 2); }

  void rehash(std::size_t capacity) {
    slots_.assign(capacity, empty);
    for (std::size_t s = 0; s < used_; ++s) {
      std::size_t i = home(states_[s].object);
      while (slots_[i] != empty) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = static_cast<std::uint32_t>(s);
    }
  }

  std::vector<std::uint32_t> slots_;
  std::vector<object_state> states_;
  std::size_t used_ = 0;
};

// keep_graph: one task as dump() shows it.
struct flow_core::record {
  struct edge {
    std::uint64_t from;
    const void* object;  // null: after()
    access_mode mode;
  };
  std::uint64_t serial = 0;
  std::string name;
  const char* kind = nullptr;  // internal tasks: "combine", "wait"
  std::vector<edge> in;
};

inline void flow_core::make_ready(flow_node* n, bool any_thread) noexcept {
  n->holds.store(2, std::memory_order_relaxed);
  // Release: wait(x) may claim the task without the push (help_towards's
  // acquire CAS); this thread saw every predecessor's work (its acq_rel
  // decrement of pending, or the producer's own view), so the claimer does
  // too. The holds store above goes with it.
  n->phase.store(flow_node::queued, std::memory_order_release);
  queue(&n, 1, any_thread);
}

inline void flow_core::queue(flow_node* const* ready, std::size_t n, bool any_thread) noexcept {
  pool& p = *pool_;
  std::array<job*, 64> jobs;
  std::size_t i = 0;
  while (i < n) {
    const std::size_t batch = std::min(n - i, jobs.size());
    for (std::size_t j = 0; j < batch; ++j) jobs[j] = ready[i + j];
    // A task that cannot be queued (no memory for a queue to grow) runs here.
    const std::size_t pushed = any_thread ? scheduler::publish_guarded(p, jobs.data(), batch)
                                          : scheduler::publish(p, jobs.data(), batch);
    for (std::size_t j = pushed; j < batch; ++j) run_node(jobs[j]);
    i += batch;
  }
}

}  // namespace weft::detail
