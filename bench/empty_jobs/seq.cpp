// Empty jobs: the sequential baseline, N calls of the job through a volatile
// function pointer (the call cannot be inlined or removed).
#include "empty_jobs/empty_jobs.hpp"

namespace {

auto setup() {
  return [](std::int64_t n) {
    void (*volatile job)() noexcept = &bench::count_job;
    for (std::int64_t i = 0; i < n; ++i) job();
  };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::empty_jobs::add("call", bench::empty_jobs::run_by::any_thread, setup);
});

}  // namespace
