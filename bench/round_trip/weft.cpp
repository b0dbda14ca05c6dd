// Round trip: weft, pool.submit(job).get() from the main thread on a pool of
// 2 workers. The job returns whether it ran on a worker.
#include <weft/weft.hpp>

#include "round_trip/round_trip.hpp"

namespace {

void run(benchmark::State& state) {
  weft::pool pool{weft::pool_options{.threads = bench::workers}};
  auto trip = [&pool] {
    return pool.submit([] { return weft::this_worker::index().has_value(); }).get();
  };
  bench::round_trip::measure(state, trip);
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::round_trip::add("submit_get", run); });

}  // namespace
