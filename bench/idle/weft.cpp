// Idle: weft, a pool of 2 workers. The work is spawned from the main thread;
// the sleeping job is submitted from the main thread, which blocks in get().
#include <weft/weft.hpp>

#include "idle/idle.hpp"

namespace {

struct weft_pool {
  static constexpr bool has_workers = true;
  weft::pool pool{weft::pool_options{.threads = bench::workers}};

  void work(std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) pool.spawn([] { bench::count_job(); });
    pool.wait();
  }
  bool sleeping_job(std::chrono::nanoseconds d) {
    return pool
        .submit([d] {
          std::this_thread::sleep_for(d);
          return weft::this_worker::index().has_value();
        })
        .get();
  }
};

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::idle::add<weft_pool>("pool"); });

}  // namespace
