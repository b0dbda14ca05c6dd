// flow_overhead's floor: the same task graphs run in program order on the
// calling thread, so the measured time is the tasks' own (sleeps that
// overshoot, the order check) and ns_per_task shows what the measurement
// itself leaves over when no library is involved.
#include "flow_overhead/flow_overhead.hpp"

namespace {

using bench::flow_overhead::resource;

class seq_library {
 public:
  seq_library(int /*workers*/, std::size_t /*max_unfinished*/) {}
  int status() const { return 0; }
  int workers() const { return 1; }
  int helpers() const { return 0; }
  static constexpr bool deferred = false;
  template <class F>
  void run(F&& f) {
    f();
  }
  template <class F>
  void emplace(F body, resource* const* /*r*/, int /*n*/) {
    body();
  }
  template <class F>
  void emplace_free(F body) {
    body();
  }
  void wait() {}
};

const int timing = bench::on_startup(
    bench::suite::timing, [] { bench::flow_overhead::add_overhead<seq_library>("program_order"); });

}  // namespace
