// Hipe's benchmarks: the sequential baseline on the calling thread. compute:
// the whole matrix at once, whatever the row's K (the seed's single-thread
// run, the numerator of its speed-up); memory: a loop over the jobs.
#include "hipe/hipe.hpp"

namespace {

namespace hp = bench::hipe;

const int timing = bench::on_startup(bench::suite::timing, [] {
  hp::add_compute(
      "loop", [] { return [](double* m, std::size_t /*jobs*/) { hp::compute_share(m, 0, 1); }; });
  hp::add_memory("loop", [] {
    return [](std::int64_t* sums) {
      for (std::int64_t i = 0; i < hp::memory_jobs; ++i) hp::memory_job(sums, i);
    };
  });
});

}  // namespace
