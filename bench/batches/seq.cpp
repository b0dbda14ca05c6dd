// Batches: the sequential baseline, the jobs called through a volatile
// function pointer (the call cannot be inlined or removed), and the
// "futures" computed into a vector and summed.
#include <cstdint>
#include <vector>

#include "batches/batches.hpp"

namespace {

auto jobs_setup() {
  return [](std::int64_t n, std::int64_t /*k*/) {
    void (*volatile job)() noexcept = &bench::count_job;
    for (std::int64_t i = 0; i < n; ++i) job();
  };
}

auto futures_setup() {
  return [](std::int64_t n) {
    std::int64_t (*volatile value)(std::int64_t) noexcept = &bench::batches::future_value;
    std::vector<std::int64_t> results(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) results[static_cast<std::size_t>(i)] = value(i);
    return bench::batches::sum(results);
  };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::batches::add_jobs("call", {1, 10, 1000}, jobs_setup);
  bench::batches::add_futures("call", futures_setup);
});

}  // namespace
