// The growable ring of slots under the work-stealing queues (deque.hpp,
// lane.hpp): one owner writes slots and grows it, any thread reads slots.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace weft::detail {

template <class T>
class growable_ring {
 public:
  // A power-of-two ring of slots. mask and slots are immutable once the
  // buffer is published; retired_next is touched by the owner only.
  struct buffer {
    explicit buffer(std::int64_t capacity)
        : mask{capacity - 1},
          slots{std::make_unique<std::atomic<T>[]>(static_cast<std::size_t>(capacity))} {}

    [[nodiscard]] std::int64_t capacity() const noexcept { return mask + 1; }
    [[nodiscard]] std::atomic<T>& at(std::int64_t index) const noexcept {
      return slots[index & mask];
    }

    const std::int64_t mask;
    const std::unique_ptr<std::atomic<T>[]> slots;
    std::unique_ptr<buffer> retired_next;
  };

  // capacity must be a power of two.
  explicit growable_ring(std::int64_t capacity) : current_{new buffer{capacity}} {}
  // No other thread may use the ring any more, and whatever ended their use
  // orders it before this, so relaxed is enough. retired_ frees the replaced
  // buffers.
  ~growable_ring() { delete current_.load(std::memory_order_relaxed); }
  growable_ring(const growable_ring&) = delete;
  growable_ring& operator=(const growable_ring&) = delete;

  // Owner only. Relaxed: the owner is the only writer of current_.
  [[nodiscard]] buffer* owned() const noexcept { return current_.load(std::memory_order_relaxed); }

  // Any thread. Acquire (not consume) pairs with the release store in
  // grow(): a reader that sees a new buffer sees its construction and the
  // copied slots.
  [[nodiscard]] buffer* shared() const noexcept { return current_.load(std::memory_order_acquire); }

  // Owner only. Replaces buf, which holds the live indices [t, b), by a
  // buffer twice as large. A reader that loaded buf may still read it, so it
  // is retired, not freed, until the ring is destroyed; the capacities
  // double, so the retired buffers together are smaller than the current
  // one. Throws only std::bad_alloc, and then nothing has changed.
  buffer* grow(buffer* buf, std::int64_t t, std::int64_t b) {
    auto bigger = std::make_unique<buffer>(buf->capacity() * 2);
    for (std::int64_t i = t; i < b; ++i) {
      // Relaxed: only the owner writes slots, and the new buffer is not
      // published yet.
      bigger->at(i).store(buf->at(i).load(std::memory_order_relaxed), std::memory_order_relaxed);
    }
    buf->retired_next = std::move(retired_);
    retired_.reset(buf);
    buffer* const published = bigger.release();
    // Release: pairs with the acquire load in shared().
    current_.store(published, std::memory_order_release);
    return published;
  }

 private:
  std::atomic<buffer*> current_;     // written by the owner only, read by every thread
  std::unique_ptr<buffer> retired_;  // owner only: buffers replaced by grow(), newest first
};

}  // namespace weft::detail
