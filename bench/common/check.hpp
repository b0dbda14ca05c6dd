// Result verification shared by every benchmark.
//
// A benchmark that computed something wrong must not print a time as if it
// had succeeded. check() marks the run as failed with State::SkipWithError
// (so the JSON output carries "error_occurred") and remembers the failure so
// that the executable exits non-zero; weft_bench_report fails on the same
// JSON field. Callers stop the timing loop when check() returns false.
#pragma once

#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace bench {

// Returns `ok`. On false: reports `what` as this run's error.
bool check(benchmark::State& state, bool ok, std::string_view what);

// Returns got == expected. On false: reports "<what>: expected E, got G".
bool check_equal(benchmark::State& state, std::int64_t got, std::int64_t expected,
                 std::string_view what);

// True once any check in this process has failed.
bool any_check_failed() noexcept;

// fib(n) for 0 <= n < 47 (fib(46) is the largest that fits in an int),
// computed at compile time, independent of every recursion under test.
inline constexpr std::array<std::int64_t, 47> fib_table = [] {
  std::array<std::int64_t, 47> t{};
  t[1] = 1;
  for (std::size_t i = 2; i < t.size(); ++i) t[i] = t[i - 1] + t[i - 2];
  return t;
}();

}  // namespace bench
