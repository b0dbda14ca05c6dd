// Wake-up latency: weft, pool.submit(job).get() from the main thread on a
// pool of 2 workers, after 1 ms of idleness.
#include <weft/weft.hpp>

#include "wake_latency/wake_latency.hpp"

namespace {

void run(benchmark::State& state) {
  weft::pool pool{weft::pool_options{.threads = bench::workers}};
  auto hand_over = [&pool](std::chrono::steady_clock::time_point* started) {
    return pool
        .submit([started] {
          *started = std::chrono::steady_clock::now();
          return weft::this_worker::index().has_value();
        })
        .get();
  };
  bench::wake_latency::measure(state, hand_over);
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::wake_latency::add("submit_get", run); });

}  // namespace
