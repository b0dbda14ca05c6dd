// Resize cost: weft, pool.resize(workers + 1) and back (resize.hpp).
#include <atomic>
#include <cstddef>
#include <weft/weft.hpp>

#include "resize/resize.hpp"

namespace {

using bench::resize::steady;

void grow_and_shrink(benchmark::State& state) {
  const std::size_t base = bench::workers;
  weft::pool pool{weft::pool_options{.threads = base, .max_threads = base + 1}};
  std::atomic<int> ran{0};
  steady::time_point started{};  // written by the job before its release increment
  bool on_new_worker = false;
  auto grow = [&] {
    const int before = ran.load(std::memory_order_relaxed);
    pool.resize(base + 1);
    pool.spawn_on(base, [&] {
      started = steady::now();
      on_new_worker = weft::this_worker::index() == base;
      // Release pairs with the acquire wait below.
      ran.fetch_add(1, std::memory_order_release);
      ran.notify_one();
    });
    ran.wait(before, std::memory_order_acquire);
    return on_new_worker ? started : steady::time_point{};
  };
  auto shrink = [&] { pool.resize(base); };
  bench::resize::measure(state, grow, shrink);
  bench::check_equal(state, ran.load(), bench::resize::samples_per_iteration,
                     "first jobs of new workers");
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::resize::add("resize", grow_and_shrink); });

}  // namespace
