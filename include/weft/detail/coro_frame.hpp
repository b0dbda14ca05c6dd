// The frame allocator of weft::coro: a per-thread cache of coroutine frames
// by size class, in front of the heap (docs/coroutines.md, "Frames").
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#include "weft/detail/platform.hpp"

namespace weft::detail {

// Frames of up to 4 KiB come from the calling thread's free list of their
// class: 64 bytes apart up to 1 KiB (small_classes), 256 bytes apart above
// (large_classes; a join of ten children keeps its ten slots and results in
// its frame, over 1 KiB). Larger ones come from the heap. A frame goes back
// to the list of the thread that frees it (a coroutine may end on another
// worker than the one it began on), which keeps at most `keep` frames per
// small class and `keep_large` per large one and gives the rest back to the
// heap: a thread caches at most 544 KiB of small frames and 504 KiB of large
// ones (a fib(30) on two workers keeps a few dozen frames). Plain loads and
// stores only: the lists are the thread's own. LIFO, so the frame a child
// just freed is the next child's, still warm in the cache.
class coro_frames {
 public:
  static constexpr std::size_t granule = 64;
  static constexpr std::size_t small_classes = 16;  // up to 1 KiB
  static constexpr std::size_t large_granule = 256;
  static constexpr std::size_t large_classes = 12;  // up to 4 KiB
  static constexpr std::size_t classes = small_classes + large_classes;
  static constexpr std::size_t small_limit = small_classes * granule;
  static constexpr std::uint32_t keep = 64;
  static constexpr std::uint32_t keep_large = 16;

  coro_frames() = default;
  coro_frames(const coro_frames&) = delete;
  coro_frames& operator=(const coro_frames&) = delete;
  // The thread is ending: its cached frames go back to the heap, and later
  // frees on it (a frame destroyed by another thread_local's destructor) go
  // there directly. Only its own members and writes to thread_locals
  // (platform::per_thread: on Windows this runs after MinGW's emulated TLS
  // is gone).
  ~coro_frames() {
    current = nullptr;
    gone = true;
    for (node*& head : free_) {
      while (head != nullptr) {
        node* const next = head->next;
        ::operator delete(head);
        head = next;
      }
    }
  }

  [[nodiscard]] static void* allocate(std::size_t n) {
    const std::size_t c = class_of(n);
    if (c >= classes) return ::operator new(n);
    coro_frames* f = current;
    if (f == nullptr) f = make_mine();
    if (f != nullptr) {
      if (node* x = f->free_[c]; x != nullptr) {
        f->free_[c] = x->next;
        --f->count_[c];
        return x;
      }
    }
    return ::operator new(size_of(c));
  }

  static void release(void* p, std::size_t n) noexcept {
    const std::size_t c = class_of(n);
    if (c < classes) {
      coro_frames* f = current;
      if (f == nullptr) f = make_mine();
      if (f != nullptr && f->count_[c] < (c < small_classes ? keep : keep_large)) {
        auto* x = ::new (p) node{f->free_[c]};
        f->free_[c] = x;
        ++f->count_[c];
        return;
      }
    }
    ::operator delete(p);
  }

  // Whether frames of n bytes come from the cache.
  [[nodiscard]] static constexpr bool cached_class(std::size_t n) noexcept {
    return class_of(n) < classes && size_of(class_of(n)) >= n &&
           (class_of(n) == 0 || size_of(class_of(n) - 1) < n);
  }

  // How many frames the calling thread keeps (tests).
  [[nodiscard]] static std::size_t cached() noexcept {
    const coro_frames* f = current;
    if (f == nullptr) return 0;
    std::size_t total = 0;
    for (const std::uint32_t k : f->count_) total += k;
    return total;
  }

 private:
  struct node {
    node* next;
  };

  // Constants where the compiler knows n (a coroutine's frame size).
  [[nodiscard]] static constexpr std::size_t class_of(std::size_t n) noexcept {
    if (n <= small_limit) return n == 0 ? 0 : (n - 1) / granule;
    return small_classes + (n - small_limit - 1) / large_granule;  // >= classes: the heap
  }
  [[nodiscard]] static constexpr std::size_t size_of(std::size_t c) noexcept {
    return c < small_classes ? (c + 1) * granule
                             : small_limit + (c - small_classes + 1) * large_granule;
  }
  // The calling thread's cache, made on its first frame, or nullptr: once
  // it is gone (the thread is ending), or if it cannot be made (Windows:
  // std::bad_alloc, or no fiber-local slot left); frames then come from
  // and go back to the heap. Out of the hot path, which reads `current`.
  [[nodiscard]] static coro_frames* make_mine() noexcept {
    if (gone) return nullptr;
    try {
      // platform::per_thread, not a thread_local coro_frames: MinGW's
      // emulated TLS is freed before thread_local destructors run.
      current = &platform::per_thread<coro_frames>();
    } catch (...) {
      return nullptr;
    }
    return current;
  }

  // The fast path's one TLS load: the calling thread's cache, or nullptr
  // before its first frame and after its end. Constant-initialised, so
  // reading it needs no TLS guard call.
  static constinit inline thread_local coro_frames* current = nullptr;
  static constinit inline thread_local bool gone = false;
  node* free_[classes] = {};
  std::uint32_t count_[classes] = {};
};

// The classes tile the sizes: each one's largest frame is its own.
static_assert(coro_frames::cached_class(1024) && coro_frames::cached_class(4096) &&
              !coro_frames::cached_class(4097));

}  // namespace weft::detail
