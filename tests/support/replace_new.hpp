// Replaces the global operator new and delete of the test executable that
// includes this header (include it from exactly one of its .cpp files), so
// that a test can observe or fail allocations: every allocation first calls
// weft::test::allocation_hook, when one is set, which may count it or throw
// std::bad_alloc. Not under the sanitizers, which bring their own allocator:
// WEFT_TEST_REPLACES_NEW tells whether the replacement is in effect. Other
// .cpp files of the executable include support/allocation_hook.hpp.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

#include "allocation_hook.hpp"
#include "weft/detail/platform.hpp"

#ifdef WEFT_TEST_REPLACES_NEW

namespace weft::test {

inline void* hooked_alloc(std::size_t n, std::size_t alignment) {
  // Relaxed: a test sets the hook before the allocations it watches, from
  // the thread that starts them.
  if (void (*hook)() = allocation_hook.load(std::memory_order_relaxed)) hook();
  void* p = alignment <= alignof(std::max_align_t)
                ? std::malloc(n == 0 ? 1 : n)
                : weft::detail::platform::aligned_allocate(
                      alignment, (n + alignment - 1) / alignment * alignment, false);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace weft::test

// GCC pairs the free() below with the new-expressions it inlines this into and
// warns; new and delete are replaced together here, so they do match.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) { return weft::test::hooked_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  return weft::test::hooked_alloc(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// Over-aligned blocks come from the platform layer (_aligned_malloc on
// Windows, which free() cannot take).
void operator delete(void* p, std::align_val_t) noexcept {
  weft::detail::platform::aligned_free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  weft::detail::platform::aligned_free(p);
}
#pragma GCC diagnostic pop
#endif
