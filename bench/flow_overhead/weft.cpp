// Per-task costs of weft's data-flow front end (flow_overhead.hpp): one
// weft::flow on a pool of `workers` threads; each resource a task uses is
// declared with weft::write, an independent task declares nothing; the
// caller waits with flow::wait. The flow keeps its default window (4,096
// unfinished tasks) except in flow_gap, whose 100,001 queued tasks need a
// larger one.
#include <weft/weft.hpp>

#include "flow_overhead/flow_overhead.hpp"

namespace {

using bench::flow_overhead::clock;
using bench::flow_overhead::resource;

class weft_library {
 public:
  weft_library(int workers, std::size_t max_unfinished)
      : workers_(workers),
        pool_(weft::pool_options{.threads = static_cast<std::size_t>(workers)}),
        flow_(pool_, options(max_unfinished)) {}

  int status() const { return 0; }
  int workers() const { return workers_; }
  int helpers() const { return workers_; }
  static constexpr bool deferred = false;

  template <class F>
  void run(F&& f) {
    f();
  }

  template <class F>
  void emplace(F body, resource* const* r, int n) {
    const auto task = [body](auto&...) { body(); };
    switch (n) {
      case 1:
        flow_.emplace(task, weft::write(*r[0]));
        break;
      case 2:
        flow_.emplace(task, weft::write(*r[0]), weft::write(*r[1]));
        break;
      case 3:
        flow_.emplace(task, weft::write(*r[0]), weft::write(*r[1]), weft::write(*r[2]));
        break;
      case 4:
        flow_.emplace(task, weft::write(*r[0]), weft::write(*r[1]), weft::write(*r[2]),
                      weft::write(*r[3]));
        break;
      default:
        flow_.emplace(task, weft::write(*r[0]), weft::write(*r[1]), weft::write(*r[2]),
                      weft::write(*r[3]), weft::write(*r[4]));
        break;
    }
  }

  template <class F>
  void emplace_free(F body) {
    flow_.emplace(std::move(body));
  }

  void wait() { flow_.wait(); }

 private:
  static weft::flow_options options(std::size_t max_unfinished) {
    weft::flow_options o;
    if (max_unfinished >= o.window) o.window = max_unfinished + 1;
    return o;
  }

  int workers_;
  weft::pool pool_;
  weft::flow flow_;
};

void latency(benchmark::State& state, bool idle) {
  weft_library lib(bench::workers, 0);
  auto hand_over = [&lib](clock::time_point* started) {
    bool on_worker = false;
    lib.emplace_free([started, &on_worker] {
      *started = clock::now();
      on_worker = weft::this_worker::index().has_value();
    });
    lib.wait();
    return on_worker;
  };
  bench::flow_overhead::latency(state, hand_over, idle);
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::flow_overhead::add_emplace<weft_library>("flow");
  bench::flow_overhead::add_gap<weft_library>("flow");
  bench::flow_overhead::add_overhead<weft_library>("flow");
  bench::flow_overhead::add_latency("flow", latency);
});

}  // namespace
