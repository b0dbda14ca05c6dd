// fib: weft coroutines (weft::coro, docs/coroutines.md), on a pool of 2
// workers, started with weft::sync_wait from the benchmark's thread (which
// blocks, as the other rows' get() does).
//   coro          co_await weft::join(fib(n - 1), fib(n - 2)) per call
// Also here, the deep await chain (issue 45): coro_chain/<depth>/await,
// a recursion of `depth` nested co_awaits (each call awaits the next one
// down, all frames alive at once), which runs in bounded stack because
// every hand-over is a symmetric transfer; its peak-RSS row,
// coro_chain_peak_rss/<depth>/await, gives the memory of the frames.
#include <cstdint>
#include <memory>
#include <string>
#include <weft/weft.hpp>

#include "fib/fib.hpp"

namespace {

weft::coro<int> fib_coro(int n) {
  if (n < 2) co_return n;
  auto [a, b] = co_await weft::join(fib_coro(n - 1), fib_coro(n - 2));
  co_return a + b;
}

weft::coro<std::int64_t> chain(std::int64_t depth) {
  if (depth == 0) co_return 0;
  co_return 1 + co_await chain(depth - 1);
}

std::unique_ptr<weft::pool> make_pool() {
  return std::make_unique<weft::pool>(weft::pool_options{.threads = bench::workers});
}

auto setup_coro() {
  return [pool = make_pool()](int n) { return weft::sync_wait(*pool, fib_coro(n)); };
}

constexpr std::int64_t chain_depth = 1'000'000;

void chain_row(benchmark::State& state) {
  auto pool = make_pool();
  const volatile std::int64_t depth = chain_depth;
  for (auto _ : state) {
    if (!bench::check_equal(state, weft::sync_wait(*pool, chain(depth)), chain_depth,
                            "coro_chain(" + std::to_string(chain_depth) + ")")) {
      break;
    }
  }
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  using bench::fib::counters;
  bench::fib::add_timing("coro", setup_coro, counters::ns_per_spawn);
  bench::add("coro_chain", std::to_string(chain_depth), "await", chain_row)
      ->Unit(benchmark::kMillisecond)
      ->MinTime(bench::min_time)
      ->MinWarmUpTime(bench::warm_up)
      ->UseRealTime();
});
const int peak_rss = bench::on_startup(bench::suite::peak_rss, [] {
  bench::fib::add_peak_rss("coro", setup_coro);
  const std::string name =
      bench::benchmark_name("coro_chain_peak_rss", std::to_string(chain_depth), "await");
  bench::add("coro_chain_peak_rss", std::to_string(chain_depth), "await",
             [name](benchmark::State& state) {
               if (!bench::check(state, bench::claim_process_for_peak_rss(name),
                                 "peak RSS needs a process of its own: run one peak-RSS "
                                 "benchmark per process (--benchmark_filter)")) {
                 return;
               }
               chain_row(state);
               state.counters["peak_rss_mib"] = bench::peak_rss_mib();
             })
      ->Unit(benchmark::kMillisecond)
      ->Iterations(1)
      ->UseRealTime();
});

}  // namespace
