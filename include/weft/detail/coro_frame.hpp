// The frame allocator of weft::coro: a per-thread cache of coroutine frames
// by size class, in front of the heap (docs/coroutines.md, "Frames").
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#include "weft/detail/platform.hpp"

namespace weft::detail {

// Frames of up to classes * granule bytes come from the calling thread's
// free list of their class; larger ones from the heap. A frame goes back to
// the list of the thread that frees it (a coroutine may end on another
// worker than the one it began on), which keeps at most `keep` frames per
// class and gives the rest back to the heap: a thread caches at most
// keep * granule * classes * (classes + 1) / 2 bytes (544 KiB with the
// numbers below; a fib(30) on two workers keeps a few dozen frames). Plain
// loads and stores only: the lists are the thread's own. LIFO, so the frame
// a child just freed is the next child's, still warm in the cache.
class coro_frames {
 public:
  static constexpr std::size_t granule = 64;
  static constexpr std::size_t classes = 16;
  static constexpr std::uint32_t keep = 64;

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
    return ::operator new((c + 1) * granule);
  }

  static void release(void* p, std::size_t n) noexcept {
    const std::size_t c = class_of(n);
    if (c < classes) {
      coro_frames* f = current;
      if (f == nullptr) f = make_mine();
      if (f != nullptr && f->count_[c] < keep) {
        auto* x = ::new (p) node{f->free_[c]};
        f->free_[c] = x;
        ++f->count_[c];
        return;
      }
    }
    ::operator delete(p);
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

  [[nodiscard]] static constexpr std::size_t class_of(std::size_t n) noexcept {
    return n == 0 ? 0 : (n - 1) / granule;
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

}  // namespace weft::detail
