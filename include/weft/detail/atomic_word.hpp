// Atomic access to a plain 32-bit word that is not a std::atomic: job::flags,
// which most job kinds write plainly before the job is queued, and which a
// join's stolen half shares atomically between its joiner and its thief
// (join.hpp). std::atomic_ref where the standard library has it; libc++ 16
// (Apple's toolchains among those based on it) does not, and there the
// __atomic builtins of GCC and Clang, which are what atomic_ref itself is
// built on, give the same operations with the same memory orders. Every
// caller names what its order pairs with; this file only forwards it.
#pragma once

#include <atomic>
#include <cstdint>
#include <version>

namespace weft::detail {

class word_ref {
 public:
  explicit word_ref(std::uint32_t& w) noexcept : word_(w) {}

  [[nodiscard]] std::uint32_t load(std::memory_order o) const noexcept {
#if defined(__cpp_lib_atomic_ref)
    return std::atomic_ref<std::uint32_t>{word_}.load(o);
#else
    return __atomic_load_n(&word_, builtin(o));
#endif
  }

  std::uint32_t fetch_or(std::uint32_t bits, std::memory_order o) noexcept {
#if defined(__cpp_lib_atomic_ref)
    return std::atomic_ref<std::uint32_t>{word_}.fetch_or(bits, o);
#else
    return __atomic_fetch_or(&word_, bits, builtin(o));
#endif
  }

  // As std::atomic_ref::compare_exchange_weak with one order for success
  // and failure (relaxed is the only order weft uses it with).
  bool compare_exchange_weak(std::uint32_t& expected, std::uint32_t desired,
                             std::memory_order o) noexcept {
#if defined(__cpp_lib_atomic_ref)
    return std::atomic_ref<std::uint32_t>{word_}.compare_exchange_weak(expected, desired, o);
#else
    // The failure order may not be release or acq_rel.
    const int fail = o == std::memory_order_acq_rel   ? __ATOMIC_ACQUIRE
                     : o == std::memory_order_release ? __ATOMIC_RELAXED
                                                      : builtin(o);
    return __atomic_compare_exchange_n(&word_, &expected, desired, true, builtin(o), fail);
#endif
  }

 private:
#if !defined(__cpp_lib_atomic_ref)
  static constexpr int builtin(std::memory_order o) noexcept {
    switch (o) {
      case std::memory_order_relaxed:
        return __ATOMIC_RELAXED;
      case std::memory_order_consume:
        return __ATOMIC_CONSUME;
      case std::memory_order_acquire:
        return __ATOMIC_ACQUIRE;
      case std::memory_order_release:
        return __ATOMIC_RELEASE;
      case std::memory_order_acq_rel:
        return __ATOMIC_ACQ_REL;
      case std::memory_order_seq_cst:
        break;
    }
    return __ATOMIC_SEQ_CST;
  }
#endif

  std::uint32_t& word_;
};

}  // namespace weft::detail
