// Every duration and time point weft takes from its user (timers, timed
// waits) becomes a steady-clock duration or deadline here, and only here:
// saturating, so that no conversion overflows whatever the rep, the period
// or the clock. The rules (docs/control.md "Timers", docs/waiting.md):
//   - too far ahead to represent (and +infinity) is "never": the deadline
//     steady_clock::time_point::max(), which no timer reaches and a wait
//     waits past (until its condition holds);
//   - zero, negative, in the past (and -infinity, and min() of any clock)
//     is "at once";
//   - NaN is a usage_error that says so.
// Conversions round up: a deadline is never earlier than the one asked for.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ratio>
#include <type_traits>

namespace weft::detail {

using steady_clock = std::chrono::steady_clock;

// What a NaN was given as, for the message (src/clock.cpp).
enum class time_arg : unsigned char { duration, time_point, period };

// Throws usage_error: "<who>: the <arg> is NaN; pass ... instead".
[[noreturn]] void throw_nan_time(const char* who, time_arg arg);

// Whether d's count is NaN (only a floating-point rep can be).
template <class Rep, class Period>
bool is_nan(const std::chrono::duration<Rep, Period>& d) {
  if constexpr (std::is_integral_v<Rep>) {
    return false;
  } else if constexpr (std::is_floating_point_v<Rep>) {
    return std::isnan(d.count());
  } else {  // another arithmetic-like rep: through long double
    return std::isnan(std::chrono::duration<long double, Period>(d).count());
  }
}

// d as a To, rounded up (towards +infinity) and saturated to To's range:
// To::max() / To::min() (+-infinity for a floating-point To) where it does
// not fit. d must not be NaN (see is_nan). Never overflows: integers are
// scaled by the reduced ratio of the periods, with the overflow checked
// before each step; floating-point counts are compared in long double,
// which holds every float and double exactly.
template <class To, class Rep, class Period>
To saturating_cast(const std::chrono::duration<Rep, Period>& d) noexcept {
  using to_rep = typename To::rep;
  using to_period = typename To::period;
  static_assert(std::is_arithmetic_v<to_rep>, "weft: a clock's rep must be arithmetic");
  if constexpr (!std::is_arithmetic_v<Rep> ||
                (std::is_integral_v<Rep> && sizeof(Rep) > sizeof(std::intmax_t))) {
    return saturating_cast<To>(std::chrono::duration<long double, Period>(d));
  } else if constexpr (std::is_floating_point_v<to_rep>) {
    const long double x = std::chrono::duration<long double, to_period>(d).count();
    constexpr auto most = static_cast<long double>(std::numeric_limits<to_rep>::max());
    if (x > most) return To{std::numeric_limits<to_rep>::infinity()};
    if (x < -most) return To{-std::numeric_limits<to_rep>::infinity()};
    return To{static_cast<to_rep>(x)};
  } else if constexpr (std::is_floating_point_v<Rep>) {
    const long double x = std::chrono::duration<long double, to_period>(d).count();
    if (std::isnan(x)) return To::zero();  // rejected before; no undefined conversion
    // >= and <=: where long double is double, max() rounds up to 2^63,
    // and every smaller double converts.
    if (x >= static_cast<long double>(To::max().count())) return To::max();
    if (x <= static_cast<long double>(To::min().count())) return To::min();
    return To{static_cast<to_rep>(std::ceil(x))};
  } else {
    using ratio = std::ratio_divide<Period, to_period>;
    constexpr std::intmax_t num = ratio::num;  // reduced, both positive
    constexpr std::intmax_t den = ratio::den;
    constexpr std::intmax_t widest = std::numeric_limits<std::intmax_t>::max();
    constexpr std::intmax_t hi =
        static_cast<std::uintmax_t>(std::numeric_limits<to_rep>::max()) >
                static_cast<std::uintmax_t>(widest)
            ? widest
            : static_cast<std::intmax_t>(std::numeric_limits<to_rep>::max());
    constexpr auto lo = static_cast<std::intmax_t>(std::numeric_limits<to_rep>::lowest());
    // count = whole * den + part, |part| < den: the result is
    // whole * num + part * num / den.
    std::intmax_t whole = 0;
    std::intmax_t part = 0;
    if constexpr (std::is_unsigned_v<Rep>) {
      const auto u = static_cast<std::uintmax_t>(d.count());
      const std::uintmax_t w = u / static_cast<std::uintmax_t>(den);
      if (w > static_cast<std::uintmax_t>(hi)) return To{static_cast<to_rep>(hi)};
      whole = static_cast<std::intmax_t>(w);
      part = static_cast<std::intmax_t>(u % static_cast<std::uintmax_t>(den));
    } else {
      const auto c = static_cast<std::intmax_t>(d.count());
      whole = c / den;
      part = c % den;
    }
    if (whole > hi / num) return To{static_cast<to_rep>(hi)};
    if (whole < lo / num) return To{static_cast<to_rep>(lo)};
    const std::intmax_t out = whole * num;
    std::intmax_t extra = 0;  // part * num / den rounded up; |extra| <= num
    if constexpr (num <= widest / den) {
      const std::intmax_t p = part * num;
      extra = p / den + (p % den > 0 ? 1 : 0);
    } else {  // an odd pair of periods: |part| * num may not fit
      extra = static_cast<std::intmax_t>(
          std::ceil(static_cast<long double>(part) * static_cast<long double>(num) /
                    static_cast<long double>(den)));
    }
    if (extra > 0 && out > hi - extra) return To{static_cast<to_rep>(hi)};
    if (extra < 0 && out < lo - extra) return To{static_cast<to_rep>(lo)};
    return To{static_cast<to_rep>(out + extra)};
  }
}

// a - b, saturated to D's range (for a floating-point D, plain subtraction).
template <class D>
D saturating_sub(D a, D b) noexcept {
  using rep = typename D::rep;
  if constexpr (std::is_integral_v<rep>) {
    rep r{};
    if (__builtin_sub_overflow(a.count(), b.count(), &r)) return a > b ? D::max() : D::min();
    return D{r};
  } else {
    return a - b;
  }
}

// t + d on the steady clock, saturated: time_point::max() ("never") where
// it cannot be represented.
inline steady_clock::time_point saturating_add(steady_clock::time_point t,
                                               steady_clock::duration d) noexcept {
  steady_clock::rep r{};
  if (__builtin_add_overflow(t.time_since_epoch().count(), d.count(), &r)) {
    return d.count() > 0 ? steady_clock::time_point::max() : steady_clock::time_point::min();
  }
  return steady_clock::time_point{steady_clock::duration{r}};
}

// A user's duration as the steady clock's (rounded up, saturated);
// usage_error from `who` for NaN.
template <class Rep, class Period>
steady_clock::duration to_steady_duration(const std::chrono::duration<Rep, Period>& d,
                                          const char* who, time_arg arg = time_arg::duration) {
  if (is_nan(d)) throw_nan_time(who, arg);
  return saturating_cast<steady_clock::duration>(d);
}

// The steady deadline `d` from now: now for zero, a negative d and
// -infinity; time_point::max() ("never") where now + d cannot be
// represented, and for +infinity. usage_error from `who` for NaN.
template <class Rep, class Period>
steady_clock::time_point deadline_after(const std::chrono::duration<Rep, Period>& d,
                                        const char* who) {
  const steady_clock::duration span = to_steady_duration(d, who);
  const steady_clock::time_point now = steady_clock::now();
  if (span <= span.zero()) return now;
  return saturating_add(now, span);
}

// A time point as a steady-clock deadline. A steady_clock one is taken as
// it is (rounded up, saturated); another clock's as the same distance from
// that clock's now on the steady clock, measured once: a later change of
// that clock moves nothing. Beyond the range of the common duration of the
// time point and its clock (max() of any clock, +infinity), or further
// ahead than the steady clock reaches: "never". Before that range (min(),
// -infinity) or in the past: at once. usage_error from `who` for NaN.
template <class Clock, class Duration>
steady_clock::time_point steady_deadline(const std::chrono::time_point<Clock, Duration>& when,
                                         const char* who) {
  if (is_nan(when.time_since_epoch())) throw_nan_time(who, time_arg::time_point);
  if constexpr (std::is_same_v<Clock, steady_clock>) {
    return steady_clock::time_point{
        saturating_cast<steady_clock::duration>(when.time_since_epoch())};
  } else {
    using common = std::common_type_t<Duration, typename Clock::duration>;
    const auto at = saturating_cast<common>(when.time_since_epoch());
    if (at >= common::max()) return steady_clock::time_point::max();
    if (at <= common::min()) return steady_clock::now();
    const auto left = saturating_sub(at, saturating_cast<common>(Clock::now().time_since_epoch()));
    return deadline_after(left, who);
  }
}

// Whether Clock::now() has reached `when` (false for "never", see
// steady_deadline), compared without overflow. `when` must not be NaN.
template <class Clock, class Duration>
bool has_come(const std::chrono::time_point<Clock, Duration>& when) {
  using common = std::common_type_t<Duration, typename Clock::duration>;
  const auto at = saturating_cast<common>(when.time_since_epoch());
  if (at >= common::max()) return false;
  return saturating_cast<common>(Clock::now().time_since_epoch()) >= at;
}

}  // namespace weft::detail
