#include "common/measure.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <string>

namespace bench {
namespace {

std::chrono::nanoseconds to_ns(const timeval& tv) {
  return std::chrono::seconds(tv.tv_sec) + std::chrono::microseconds(tv.tv_usec);
}

rusage self_usage() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage;
}

}  // namespace

std::chrono::nanoseconds process_cpu_time() {
  const rusage usage = self_usage();
  return to_ns(usage.ru_utime) + to_ns(usage.ru_stime);
}

double peak_rss_mib() {
  // Linux reports ru_maxrss in KiB.
  return static_cast<double>(self_usage().ru_maxrss) / 1024.0;
}

double to_ms(std::chrono::nanoseconds d) noexcept {
  return std::chrono::duration<double, std::milli>(d).count();
}

double median(std::vector<double>& samples) {
  if (samples.empty()) return 0.0;
  const auto mid = samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 2);
  std::nth_element(samples.begin(), mid, samples.end());
  if (samples.size() % 2 == 1) return *mid;
  const double upper = *mid;
  const double lower = *std::max_element(samples.begin(), mid);
  return (lower + upper) / 2.0;
}

bool claim_process_for_peak_rss(std::string_view benchmark_name) {
  // Benchmarks run one after another on the main thread: no lock needed.
  static std::string owner;
  if (owner.empty()) owner = benchmark_name;
  return owner == benchmark_name;
}

}  // namespace bench
