// The one message for a NaN duration or time point (weft/detail/clock.hpp).
#include "weft/detail/clock.hpp"

#include <string>

#include "weft/errors.hpp"

namespace weft::detail {

void throw_nan_time(const char* who, time_arg arg) {
  std::string what = who;
  switch (arg) {
    case time_arg::duration:
      what +=
          ": the duration is NaN, which is no length of time; pass a number instead (+infinity, "
          "or anything too long to represent, means never; zero or a negative duration means "
          "at once)";
      break;
    case time_arg::time_point:
      what +=
          ": the time point is NaN, which is no time; pass a number instead (+infinity, max(), "
          "or anything too far ahead to represent, means never; a past time, min() or "
          "-infinity means at once)";
      break;
    case time_arg::period:
      what +=
          ": the period is NaN, which is no length of time; pass a positive number instead "
          "(+infinity, or a period too long to represent, means a timer that never fires)";
      break;
  }
  throw usage_error(what);
}

}  // namespace weft::detail
