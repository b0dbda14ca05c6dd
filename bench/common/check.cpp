#include "common/check.hpp"

#include <atomic>

namespace bench {
namespace {

// Set by any failed check, read by main() after all benchmarks have run.
// Relaxed is enough: benchmarks and main() run on the same thread, and any
// helper thread that checks something is joined before its benchmark returns.
std::atomic<bool> failed{false};

}  // namespace

bool check(benchmark::State& state, bool ok, std::string_view what) {
  if (!ok) {
    failed.store(true, std::memory_order_relaxed);
    state.SkipWithError(std::string(what).c_str());
  }
  return ok;
}

bool check_equal(benchmark::State& state, std::int64_t got, std::int64_t expected,
                 std::string_view what) {
  if (got == expected) return true;
  std::string message(what);
  message += ": expected " + std::to_string(expected) + ", got " + std::to_string(got);
  return check(state, false, message);
}

bool any_check_failed() noexcept { return failed.load(std::memory_order_relaxed); }

}  // namespace bench
