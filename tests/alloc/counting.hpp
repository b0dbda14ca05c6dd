// How many allocations every thread makes while a callable runs, through the
// allocation hook of this executable's operator new (support/allocation_hook.hpp).
// Only where WEFT_TEST_REPLACES_NEW is defined: not under the sanitizers.
#pragma once

#include <atomic>

#include "support/allocation_hook.hpp"

#ifdef WEFT_TEST_REPLACES_NEW
namespace weft::test {

inline std::atomic<long> counted_allocations{0};
inline void count_allocation() { counted_allocations.fetch_add(1, std::memory_order_relaxed); }

// How many allocations all threads made while f ran.
template <class F>
long allocations_during(F&& f) {
  counted_allocations.store(0);
  allocation_hook.store(&count_allocation, std::memory_order_relaxed);
  f();
  allocation_hook.store(nullptr, std::memory_order_relaxed);
  return counted_allocations.load();
}

}  // namespace weft::test
#endif
