// Pinning workers to CPUs and calling the worker hooks (docs/control.md).
#include "weft/detail/worker_start.hpp"

#include <algorithm>
#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

#include "weft/detail/context.hpp"
#include "weft/detail/fault.hpp"
#include "weft/detail/platform.hpp"
#include "weft/errors.hpp"
#include "weft/pool.hpp"

namespace weft::detail {

namespace {

// {0, 1, 2, 3, 8, 10, 11} -> "0-3,8,10-11"; empty -> "none".
std::string format_cpu_list(const std::vector<int>& cpus) {
  if (cpus.empty()) return "none";
  std::string text;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(cpus[i]);
    if (j > i) text += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return text;
}

std::size_t worker_count(const std::optional<std::size_t>& threads, const std::vector<int>& cpus) {
  if (threads) return *threads;
  return cpus.empty() ? available_parallelism() : cpus.size();
}

}  // namespace

void pin_this_thread(int cpu, const std::string& what) {
  std::error_code error = platform::pin_this_thread(cpu);
  if (fault::pin_fails()) error = std::make_error_code(std::errc::invalid_argument);
  if (error) {
    throw std::system_error(error, "weft: could not pin " + what + " to CPU " +
                                       std::to_string(cpu) + " (" + platform::pin_call() + ")");
  }
}

void call_worker_hook(const std::function<void(std::size_t)>& hook, std::size_t index) {
  // A thread that is not a worker, whose this_worker::index() is `index`:
  // the same slot a helping outside thread reports, so that index() costs
  // jobs nothing more.
  context& ctx = tls;
  const context saved = ctx;
  ctx = context{};
  ctx.helper_index = index;
  struct restore {
    context& ctx;
    const context& saved;
    restore(context& c, const context& s) noexcept : ctx(c), saved(s) {}
    restore(const restore&) = delete;
    restore& operator=(const restore&) = delete;
    ~restore() { ctx = saved; }
  } const guard{ctx, saved};
  hook(index);
}

worker_start::worker_start(const std::optional<std::size_t>& threads, const std::vector<int>& cpus,
                           const std::function<void(std::size_t)>& on_start, std::string pool_name)
    : workers_(worker_count(threads, cpus)),
      cpus_(cpus),
      on_start_(on_start),
      pool_name_(std::move(pool_name)) {
  if (cpus_.empty()) return;
  const std::string where = "weft::pool '" + pool_name_ + "': ";
  if (workers_ == 0) {
    throw usage_error(where +
                      "pool_options::cpus is set but threads = 0 (sequential mode has no worker "
                      "threads to pin); leave cpus empty, or ask for threads");
  }
  const std::vector<int> allowed = allowed_cpus();
  for (std::size_t i = 0; i < cpus_.size(); ++i) {
    const int cpu = cpus_[i];
    const std::string entry =
        "pool_options::cpus[" + std::to_string(i) + "] = " + std::to_string(cpu);
    if (cpu < 0 || cpu >= platform::cpu_limit()) {
      throw usage_error(where + entry + " is not a CPU number (0 to " +
                        std::to_string(platform::cpu_limit() - 1) +
                        "); this process may use CPUs " + format_cpu_list(allowed) +
                        " (weft::allowed_cpus())");
    }
    if (!std::binary_search(allowed.begin(), allowed.end(), cpu)) {
      throw usage_error(where + entry + " is a CPU this process may not use; its affinity mask " +
                        "allows CPUs " + format_cpu_list(allowed) + " (weft::allowed_cpus())");
    }
  }
}

bool worker_start::run(std::size_t index) noexcept {
  std::exception_ptr error;
  try {
    if (!cpus_.empty()) {
      pin_this_thread(cpus_[index % cpus_.size()],
                      "worker " + std::to_string(index) + " of pool '" + pool_name_ + "'");
    }
    if (on_start_ != nullptr) call_worker_hook(on_start_, index);
  } catch (...) {
    error = std::current_exception();
  }
  // Notified under the lock: once it sees the count, the constructor may
  // return and take this object with it.
  const std::lock_guard lock{mutex_};
  if (error && !error_) error_ = error;
  ++reported_;
  reported_cv_.notify_all();
  return !error;
}

void worker_start::wait(std::size_t started) {
  std::unique_lock lock{mutex_};
  reported_cv_.wait(lock, [&] { return reported_ == started; });
  if (error_) std::rethrow_exception(error_);
}

}  // namespace weft::detail
