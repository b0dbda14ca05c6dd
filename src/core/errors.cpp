#include "weft/detail/core/errors.hpp"

#include <cstdio>

namespace weft::detail {

void error_sink::report(std::exception_ptr error) noexcept {
  if (handler_) {
    try {
      handler_(error);
      return;
    } catch (...) {
      // A throwing handler must not lose the error: keep what it threw.
      error = std::current_exception();
    }
  }
  try {
    std::lock_guard lock{mutex_};
    errors_.push_back(std::move(error));
  } catch (...) {
    std::fputs("weft: out of memory while storing a job's exception\n", stderr);
  }
}

void error_sink::rethrow_pending() {
  std::exception_ptr error;
  {
    std::lock_guard lock{mutex_};
    if (errors_.empty()) return;
    error = std::move(errors_.front());
    errors_.pop_front();
  }
  std::rethrow_exception(error);
}

void error_sink::print_unrethrown(const std::string& pool_name) {
  std::lock_guard lock{mutex_};
  if (errors_.empty()) return;
  std::string what = "a non-standard exception";
  try {
    std::rethrow_exception(errors_.front());
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  std::fprintf(stderr,
               "weft: pool '%s' was destroyed with %zu exception(s) of detached jobs or worker "
               "hooks that no wait() rethrew; the first: %s\n",
               pool_name.c_str(), errors_.size(), what.c_str());
}

}  // namespace weft::detail
