// weft::test::allocation_hook: what the global operator new of a test
// executable calls before every allocation, when that executable replaces it
// (support/replace_new.hpp, included from exactly one of its .cpp files). Its
// other .cpp files include this header to set the hook. Not under the
// sanitizers, which bring their own allocator: WEFT_TEST_REPLACES_NEW tells
// whether the replacement is in effect.
#pragma once

#include <atomic>

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define WEFT_TEST_REPLACES_NEW 1

namespace weft::test {

// Called before every allocation of any thread while non-null.
inline std::atomic<void (*)()> allocation_hook{nullptr};

}  // namespace weft::test
#endif
