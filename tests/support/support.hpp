// Helpers shared by weft's tests.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>
#include <weft/detail/fault.hpp>
#include <weft/detail/platform.hpp>
#include <weft/detail/scheduler.hpp>
#include <weft/pool.hpp>

namespace weft::test {

// Multiplies iteration counts: 1 in release CI, smaller under sanitizers
// (scripts/test.sh sets WEFT_STRESS_SCALE).
// The emulator the tests run under (WEFT_TEST_EMULATOR, set by a cross
// toolchain file's CMAKE_CROSSCOMPILING_EMULATOR), or nullptr natively.
inline const char* emulator() { return std::getenv("WEFT_TEST_EMULATOR"); }

inline double stress_scale() {
  const char* s = std::getenv("WEFT_STRESS_SCALE");
  if (s == nullptr) return 1.0;
  const double v = std::strtod(s, nullptr);
  return v > 0 ? v : 1.0;
}

inline std::size_t scaled(std::size_t n, std::size_t at_least = 1) {
  const auto v = static_cast<std::size_t>(static_cast<double>(n) * stress_scale());
  return v < at_least ? at_least : v;
}

// `v += by` as one atomic read-modify-write on an object that is not a
// std::atomic (a flow's concurrent object): what std::atomic_ref would do,
// which libc++ 16 lacks. TSan sees the builtin as atomic.
inline void atomic_add(std::uint64_t& v, std::uint64_t by, int order = __ATOMIC_SEQ_CST) noexcept {
  __atomic_fetch_add(&v, by, order);
}

// Worker counts every pool test runs with; 0 is sequential mode.
inline const std::vector<std::size_t>& worker_counts() {
  static const std::vector<std::size_t> counts{0, 1, 2, 4, 8};
  return counts;
}

inline std::string workers_name(std::size_t n) { return "workers_" + std::to_string(n); }

// Waits, yielding, until `flag` is set, for at most 10 s; false if it
// never was.
inline bool wait_for(const std::atomic<bool>& flag) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (!flag.load()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// Waits, yielding, until a worker of `p` other than the caller is searching
// for work or asleep (the hint a worker's spawn reads to decide whether to
// publish it at once: docs/deque.md, "Idle workers"), for at most 10 s;
// false if none ever was. A fixed sleep is not enough on a loaded machine:
// a worker preempted between two jobs counts as busy.
inline bool wait_for_an_idle_worker(const weft::pool& p) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (!weft::detail::scheduler::someone_idle(p)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// Scales the sleeping pauses of every backoff (detail::fault::
// backoff_sleep_scale) while it lives: 10'000 makes the first 0.5 s, so a
// wait that sleeps a pause out, where something should have woken it,
// returns that late.
class backoff_sleep_scaled {
 public:
  explicit backoff_sleep_scaled(unsigned by) { weft::detail::fault::backoff_sleep_scale = by; }
  backoff_sleep_scaled(const backoff_sleep_scaled&) = delete;
  backoff_sleep_scaled& operator=(const backoff_sleep_scaled&) = delete;
  ~backoff_sleep_scaled() { weft::detail::fault::backoff_sleep_scale = 1; }
};

// splitmix64's finaliser: a well-mixed 64-bit hash for random test data.
constexpr std::uint64_t mix(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// While it lives, every nap of a waiter that another thread wakes
// (fault::nap_hook) begins up to `most` later, at random: jobs then end
// between the wait's last look at its condition and the nap's
// announcement, the race those naps must not lose.
class naps_delayed {
 public:
  explicit naps_delayed(std::chrono::microseconds most) {
    limit_us.store(most.count());
    weft::detail::fault::nap_hook.store(&delay);
  }
  naps_delayed(const naps_delayed&) = delete;
  naps_delayed& operator=(const naps_delayed&) = delete;
  ~naps_delayed() { weft::detail::fault::nap_hook.store(nullptr); }

 private:
  static inline std::atomic<std::int64_t> limit_us{0};
  static void delay() {
    // Seeded by the thread's id, so each thread draws its own delays.
    thread_local std::uint64_t calls = std::hash<std::thread::id>{}(std::this_thread::get_id());
    const std::uint64_t draw = mix(++calls);
    const auto limit = static_cast<std::uint64_t>(limit_us.load()) + 1;
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds{draw % limit};
    while (std::chrono::steady_clock::now() < until) {
    }
  }
};

// CPU time (user + system) this process has used so far.
inline std::chrono::microseconds process_cpu_time() {
  return weft::detail::platform::process_cpu_time();
}

// Counts the exceptions that reach a pool's error path (pool_options::on_error).
struct error_count {
  std::atomic<int> n{0};
  [[nodiscard]] weft::pool_options options(std::size_t threads) {
    return {.threads = threads, .on_error = [this](const std::exception_ptr&) { n.fetch_add(1); }};
  }
};

}  // namespace weft::test
