// Results in order: the sequential baseline, plain loops into a vector.
#include "collect/collect.hpp"

namespace {

namespace co = bench::collect;

const int timing = bench::on_startup(bench::suite::timing, [] {
  co::add_replicate_fib("loop", [] {
    return [] {
      co::results r;
      r.reserve(co::replicate_jobs);
      for (std::size_t i = 0; i < co::replicate_jobs; ++i)
        r.push_back(co::fib(co::replicate_fib_n));
      return r;
    };
  });
  co::add_replicate_sum("loop", [] {
    return [] {
      const std::vector<co::value>& list = co::sum_list();
      co::results r;
      r.reserve(co::replicate_jobs);
      for (std::size_t i = 0; i < co::replicate_jobs; ++i) r.push_back(co::sum(list));
      return r;
    };
  });
  co::add_map_fib("loop", [] {
    return [] {
      co::results r;
      r.reserve(co::map_n);
      for (const std::uint64_t n : co::fib_inputs()) r.push_back(co::fib(n));
      return r;
    };
  });
  co::add_map_sum("loop", [] {
    return [] {
      co::results r;
      r.reserve(co::map_n);
      for (const std::vector<co::value>& xs : co::sum_lists()) r.push_back(co::sum(xs));
      return r;
    };
  });
});

}  // namespace
