// Parallel loops: weft's algorithms (weft/algorithm.hpp) on a pool of 2
// workers, called from the main thread, which waits meanwhile. Default
// grain: the splitting adapts to the load alone.
#include <memory>
#include <weft/algorithm.hpp>
#include <weft/weft.hpp>

#include "parallel_loops/parallel_loops.hpp"

namespace {

namespace loops = bench::parallel_loops;

std::shared_ptr<weft::pool> make_pool() {
  return std::make_shared<weft::pool>(weft::pool_options{.threads = bench::workers});
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  loops::add_sum("reduce", [] {
    return [pool = make_pool()](const std::vector<double>& v) {
      return weft::reduce(*pool, v.begin(), v.end(), 0.0);
    };
  });
  loops::add_balanced("for_each", [] {
    return [pool = make_pool()](std::vector<double>& x) {
      weft::for_each(*pool, x.begin(), x.end(), [](double& e) { loops::bump(e); });
    };
  });
  loops::add_unbalanced("for_each_index", [] {
    return [pool = make_pool()](std::vector<std::uint64_t>& out) {
      weft::for_each_index(*pool, std::int64_t{0}, loops::unbalanced_n, [&out](std::int64_t i) {
        out[static_cast<std::size_t>(i)] = loops::unbalanced_work(i);
      });
    };
  });
  loops::add_slow("for_each_index", [] {
    return [pool = make_pool()](std::vector<unsigned char>& marks) {
      weft::for_each_index(*pool, std::int64_t{0}, loops::slow_n,
                           [&marks](std::int64_t i) { loops::slow_element(marks, i); });
    };
  });
});

}  // namespace
