// A part of the pool's core (docs/design.md, "The core's parts"): where the
// exceptions of detached jobs go. A job spawned without a future has nobody
// to rethrow its exception to; the pool hands it to pool_options::on_error
// if set, else keeps it until pool::wait() rethrows it (the oldest first),
// and prints what is left when the pool is destroyed. Any thread reports;
// the handler runs on the reporting thread.
#pragma once

#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <utility>

namespace weft::detail {

class error_sink {
 public:
  explicit error_sink(std::function<void(std::exception_ptr)> handler)
      : handler_(std::move(handler)) {}
  error_sink(const error_sink&) = delete;
  error_sink& operator=(const error_sink&) = delete;

  // Any thread: to the handler, or kept for rethrow_pending(). A handler
  // that throws does not lose the error: what it threw is kept instead.
  // With no memory to keep it, says so on stderr.
  void report(std::exception_ptr error) noexcept;
  // Rethrows the oldest kept exception, if any (pool::wait()).
  void rethrow_pending();
  // Prints, on stderr, how many kept exceptions nobody rethrew and the
  // first one's what(): the pool `pool_name` is going away.
  void print_unrethrown(const std::string& pool_name);

 private:
  std::function<void(std::exception_ptr)> handler_;  // pool_options::on_error
  std::mutex mutex_;                                 // guards errors_
  std::deque<std::exception_ptr> errors_;
};

}  // namespace weft::detail
