// weft/detail/clock.hpp (issue 41, defect 3): the one place where a user's
// duration or time point becomes a steady-clock duration or deadline.
// Integer conversions are checked against 128-bit arithmetic, over random
// counts and the ends of each rep; floating-point ones at the edges. The
// timers and timed waits that use it are tested in timer_test.cpp and
// timed_wait_test.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <random>
#include <ratio>
#include <string>
#include <weft/weft.hpp>

#include "support/clock_cases.hpp"

namespace {

using namespace std::chrono_literals;
using ns = std::chrono::nanoseconds;
namespace detail = weft::detail;
using namespace weft::test::clock_cases;

__extension__ typedef __int128 wide;  // NOLINT(modernize-use-using): __extension__ needs a typedef

// count * Period in nanoseconds, rounded up and clamped, in 128 bits.
template <class Rep, class Period>
std::int64_t reference(Rep count) {
  using ratio = std::ratio_divide<Period, std::nano>;
  const wide scaled = static_cast<wide>(count) * ratio::num;
  wide q = scaled / ratio::den;
  if (scaled % ratio::den > 0) ++q;
  if (q > static_cast<wide>(std::numeric_limits<std::int64_t>::max())) {
    return std::numeric_limits<std::int64_t>::max();
  }
  if (q < static_cast<wide>(std::numeric_limits<std::int64_t>::min())) {
    return std::numeric_limits<std::int64_t>::min();
  }
  return static_cast<std::int64_t>(q);
}

template <class Rep, class Period>
void check_integer_conversions(std::mt19937_64& random) {
  constexpr Rep most = std::numeric_limits<Rep>::max();
  constexpr Rep least = std::numeric_limits<Rep>::lowest();
  for (int i = 0; i < 20000; ++i) {
    Rep count{};
    switch (i % 4) {
      case 0:
        count = static_cast<Rep>(random());
        break;
      case 1:
        count = static_cast<Rep>(static_cast<std::int64_t>(random()) >> (random() % 64));
        break;
      case 2:
        count = static_cast<Rep>(most - static_cast<Rep>(random() % 1000));
        break;
      default:
        count = static_cast<Rep>(least + static_cast<Rep>(random() % 1000));
        break;
    }
    const auto got = detail::saturating_cast<ns>(std::chrono::duration<Rep, Period>(count));
    ASSERT_EQ(got.count(), (reference<Rep, Period>(count)))
        << "count " << static_cast<long double>(count);
  }
}

TEST(clock, integer_counts_of_any_period_convert_exactly_or_saturate) {
  std::mt19937_64 random{41};
  check_integer_conversions<std::int64_t, std::ratio<1>>(random);
  check_integer_conversions<std::int64_t, std::ratio<3600>>(random);
  check_integer_conversions<std::int64_t, std::ratio<1, 3>>(random);  // num and den both > 1
  check_integer_conversions<std::int64_t, std::pico>(random);
  check_integer_conversions<std::int64_t, std::atto>(random);
  check_integer_conversions<std::int64_t, std::ratio<7, 1000000007>>(random);
  check_integer_conversions<std::uint64_t, std::ratio<1>>(random);
  check_integer_conversions<std::uint64_t, std::pico>(random);
  check_integer_conversions<std::uint64_t, std::ratio<1, 3>>(random);
  check_integer_conversions<std::int32_t, std::milli>(random);
  check_integer_conversions<std::uint32_t, std::micro>(random);
  check_integer_conversions<std::int16_t, std::ratio<86400>>(random);
}

TEST(clock, floating_point_counts_round_up_and_saturate) {
  EXPECT_EQ(detail::saturating_cast<ns>(fsec(1e300)), ns::max());
  EXPECT_EQ(detail::saturating_cast<ns>(fsec(-1e300)), ns::min());
  EXPECT_EQ(detail::saturating_cast<ns>(fsec(infinity)), ns::max());
  EXPECT_EQ(detail::saturating_cast<ns>(fsec(-infinity)), ns::min());
  // The largest double below 2^63 converts; 2^63 saturates.
  EXPECT_EQ(
      detail::saturating_cast<ns>(std::chrono::duration<double, std::nano>(9223372036854774784.0)),
      ns(9223372036854774784LL));
  EXPECT_EQ(
      detail::saturating_cast<ns>(std::chrono::duration<double, std::nano>(9223372036854775808.0)),
      ns::max());
  EXPECT_EQ(detail::saturating_cast<ns>(std::chrono::duration<double, std::nano>(0.25)), ns(1));
  EXPECT_EQ(detail::saturating_cast<ns>(std::chrono::duration<double, std::nano>(-0.25)), ns(0));
  EXPECT_EQ(detail::saturating_cast<ns>(std::chrono::duration<double, std::nano>(-1.5)), ns(-1));
  EXPECT_EQ(detail::saturating_cast<ns>(std::chrono::duration<float>(1.5F)), ns(1500000000));
  const long double most = std::numeric_limits<long double>::max();
  EXPECT_EQ(detail::saturating_cast<ns>(std::chrono::duration<long double>(most)), ns::max());
  EXPECT_EQ(detail::saturating_cast<ns>(std::chrono::duration<long double>(-most)), ns::min());
  // To a floating-point duration: too large is infinite, not undefined.
  EXPECT_EQ(detail::saturating_cast<std::chrono::duration<float>>(
                std::chrono::duration<long double>(most))
                .count(),
            std::numeric_limits<float>::infinity());
  EXPECT_TRUE(detail::is_nan(fsec(not_a_number)));
  EXPECT_TRUE(
      detail::is_nan(std::chrono::duration<float>(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_FALSE(detail::is_nan(fsec(infinity)));
  EXPECT_FALSE(detail::is_nan(std::chrono::seconds::max()));
}

TEST(clock, sums_and_differences_saturate) {
  EXPECT_EQ(detail::saturating_sub(ns::max(), ns(-5)), ns::max());
  EXPECT_EQ(detail::saturating_sub(ns::min(), ns(5)), ns::min());
  EXPECT_EQ(detail::saturating_sub(ns(5), ns(3)), ns(2));
  EXPECT_EQ(detail::saturating_add(steady::time_point::max() - ns(3), ns(5)),
            steady::time_point::max());
  EXPECT_EQ(detail::saturating_add(steady::time_point::min() + ns(3), ns(-5)),
            steady::time_point::min());
}

TEST(clock, deadlines_too_far_ahead_are_never_and_past_ones_now) {
  const steady::time_point never = steady::time_point::max();
  const steady::time_point before = steady::now();
  EXPECT_EQ(detail::deadline_after(std::chrono::seconds::max(), "t"), never);
  EXPECT_EQ(detail::deadline_after(fsec(infinity), "t"), never);
  EXPECT_EQ(detail::steady_deadline(sys_at<std::chrono::seconds>::max(), "t"), never);
  EXPECT_EQ(detail::steady_deadline(sys_clock::time_point::max(), "t"), never);
  EXPECT_EQ(detail::steady_deadline(sys_at<fsec>(fsec(infinity)), "t"), never);
  EXPECT_EQ(detail::steady_deadline(steady_at<std::chrono::hours>::max(), "t"), never);
  EXPECT_EQ(detail::steady_deadline(steady_at<std::chrono::duration<std::uint64_t>>::max(), "t"),
            never);
  const steady::time_point past[] = {
      detail::deadline_after(fsec(-infinity), "t"),
      detail::deadline_after(std::chrono::seconds::min(), "t"),
      detail::steady_deadline(sys_at<std::chrono::seconds>::min(), "t"),
      detail::steady_deadline(sys_clock::time_point::min(), "t"),
      detail::steady_deadline(sys_at<fsec>(fsec(-infinity)), "t"),
      detail::steady_deadline(steady_at<std::chrono::hours>::min(), "t"),
  };
  const steady::time_point after = steady::now();
  for (const steady::time_point p : past) EXPECT_LE(p, after);
  // An ordinary deadline on another clock: the same distance from now.
  const steady::time_point in_ten = detail::steady_deadline(sys_clock::now() + 10s, "t");
  EXPECT_GE(in_ten, before + 10s);
  EXPECT_LE(in_ten, steady::now() + 10s + 1s);
  EXPECT_FALSE(detail::has_come(sys_at<std::chrono::seconds>::max()));
  EXPECT_TRUE(detail::has_come(sys_at<std::chrono::seconds>::min()));
  EXPECT_TRUE(detail::has_come(sys_clock::time_point::min()));
  EXPECT_FALSE(detail::has_come(sys_clock::now() + 10s));
}

TEST(clock, nan_is_a_usage_error_that_names_the_call) {
  try {
    (void)detail::deadline_after(fsec(not_a_number), "weft::test::call");
    ADD_FAILURE() << "NaN accepted";
  } catch (const weft::usage_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("weft::test::call: the duration is NaN", 0), 0U)
        << e.what();
  }
  EXPECT_THROW((void)detail::steady_deadline(sys_at<fsec>(fsec(not_a_number)), "t"),
               weft::usage_error);
  EXPECT_THROW((void)detail::steady_deadline(steady_at<fsec>(fsec(not_a_number)), "t"),
               weft::usage_error);
}

}  // namespace
