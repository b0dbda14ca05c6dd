// A store-buffering litmus test: whether this machine, or the emulator the
// tests run under, keeps a seq_cst store ordered before a later seq_cst load
// of another location. C++ forbids both loads of the pair below reading 0;
// every Dekker-style protocol in weft (the deque's public pop against a
// steal, the sleep protocol's prepare/new_work pair) relies on it.
//
// qemu-user 7.2 on an x86 host breaks it: it translates AArch64's `stlr`
// and `ldar` to a plain x86 store and load with no fence between them, and
// x86 lets a store wait in its buffer past a later load. Real AArch64
// orders a load-acquire after an earlier store-release (RCsc), so a test
// that depends on the pair is skipped under such an emulator, naming the
// count this probe saw (docs/deque.md, "On a weakly ordered CPU").
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <thread>

namespace weft::test {

// Runs up to `rounds` rounds of the pair on two threads, stopping after
// the first `enough` rounds that ended with both loads reading 0 (never,
// wherever seq_cst holds); returns how many rounds did.
inline std::size_t store_buffering_violations(std::size_t rounds, std::size_t enough) {
  std::atomic<int> x{0};
  std::atomic<int> y{0};
  // Round handshake: release/acquire pairs between the two threads only.
  std::atomic<std::size_t> started{0};   // main's release store, t's acquire load
  std::atomic<std::size_t> finished{0};  // t's release store, main's acquire load
  std::atomic<bool> stop{false};         // main's release store, t's acquire load
  int r2 = 0;                            // t's result, read by main after finished's acquire load
  std::size_t violations = 0;
  std::thread t([&] {
    for (std::size_t i = 1; i <= rounds; ++i) {
      while (started.load(std::memory_order_acquire) < i) {
        if (stop.load(std::memory_order_acquire)) return;
      }
      y.store(1, std::memory_order_seq_cst);  // pairs with main's seq_cst load of y
      r2 = x.load(std::memory_order_seq_cst);
      finished.store(i, std::memory_order_release);
    }
  });
  for (std::size_t i = 1; i <= rounds && violations < enough; ++i) {
    x.store(0, std::memory_order_relaxed);
    y.store(0, std::memory_order_relaxed);
    started.store(i, std::memory_order_release);  // the resets are visible to t's round
    x.store(1, std::memory_order_seq_cst);        // pairs with t's seq_cst load of x
    const int r1 = y.load(std::memory_order_seq_cst);
    while (finished.load(std::memory_order_acquire) < i) {
    }
    if (r1 == 0 && r2 == 0) ++violations;
  }
  stop.store(true, std::memory_order_release);  // t may be waiting for a round that never starts
  t.join();
  return violations;
}

// Rounds the probe runs under an emulator, stopping at the first violation
// (qemu-user 7.2 shows one within a few thousand rounds, a fraction of a
// second).
inline constexpr std::size_t emulator_probe_rounds = 500'000;

// Whether the emulator the tests run under broke the pair within
// emulator_probe_rounds, run once per process; false natively, where the
// probe is not run (Litmus.* checks native hardware).
inline bool emulator_breaks_store_buffering() {
  static const bool broken = std::getenv("WEFT_TEST_EMULATOR") != nullptr &&
                             store_buffering_violations(emulator_probe_rounds, 1) != 0;
  return broken;
}

}  // namespace weft::test
