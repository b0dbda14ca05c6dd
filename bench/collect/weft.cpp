// Results in order: weft::collect (a job per result, gathered in spawn
// order: the seed's replicateConcurrently and traverseConcurrently) and
// weft::map (the parallel algorithm, split on demand), on a pool of 2
// workers called from the main thread, which waits meanwhile.
#include <memory>
#include <weft/weft.hpp>

#include "collect/collect.hpp"

namespace {

namespace co = bench::collect;

std::shared_ptr<weft::pool> make_pool() {
  return std::make_shared<weft::pool>(weft::pool_options{.threads = bench::workers});
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  co::add_replicate_fib("collect", [] {
    return [pool = make_pool()] {
      return weft::collect<co::value>(*pool, [](weft::collector<co::value>& c) {
        for (std::size_t i = 0; i < co::replicate_jobs; ++i) {
          c.spawn([] { return co::fib(co::replicate_fib_n); });
        }
      });
    };
  });
  co::add_replicate_sum("collect", [] {
    return [pool = make_pool()] {
      const std::vector<co::value>& list = co::sum_list();
      return weft::collect<co::value>(*pool, [&list](weft::collector<co::value>& c) {
        for (std::size_t i = 0; i < co::replicate_jobs; ++i) {
          c.spawn([&list] { return co::sum(list); });
        }
      });
    };
  });
  co::add_map_fib("collect", [] {
    return [pool = make_pool()] {
      return weft::collect<co::value>(*pool, [](weft::collector<co::value>& c) {
        for (const std::uint64_t n : co::fib_inputs()) c.spawn([n] { return co::fib(n); });
      });
    };
  });
  co::add_map_fib("map", [] {
    return [pool = make_pool()] {
      return weft::map(*pool, co::fib_inputs(), [](std::uint64_t n) { return co::fib(n); });
    };
  });
  co::add_map_sum("collect", [] {
    return [pool = make_pool()] {
      return weft::collect<co::value>(*pool, [](weft::collector<co::value>& c) {
        for (const std::vector<co::value>& xs : co::sum_lists()) {
          c.spawn([&xs] { return co::sum(xs); });
        }
      });
    };
  });
  co::add_map_sum("map", [] {
    return [pool = make_pool()] {
      return weft::map(*pool, co::sum_lists(),
                       [](const std::vector<co::value>& xs) { return co::sum(xs); });
    };
  });
});

}  // namespace
