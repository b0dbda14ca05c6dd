// What the tests of timers, timed waits and the clock conversions share:
// names for the clocks and reps they try, and the check of a NaN's error.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <string>

namespace weft::test::clock_cases {

using steady = std::chrono::steady_clock;
using sys_clock = std::chrono::system_clock;
template <class D>
using sys_at = std::chrono::time_point<sys_clock, D>;
template <class D>
using steady_at = std::chrono::time_point<steady, D>;
using fsec = std::chrono::duration<double>;
inline constexpr double infinity = std::numeric_limits<double>::infinity();
inline constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();

// Checks that call() throws a usage_error that names `who`, says NaN and
// says what to pass instead.
template <class Call>
void expect_nan_error(Call call, const std::string& who) {
  try {
    call();
    ADD_FAILURE() << who << " accepted NaN";
  } catch (const weft::usage_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(who + ":"), std::string::npos) << what;
    EXPECT_NE(what.find("NaN"), std::string::npos) << what;
    EXPECT_NE(what.find("pass a"), std::string::npos) << what;
  }
}

}  // namespace weft::test::clock_cases
