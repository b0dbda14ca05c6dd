// Results in order: OpenMP with 2 threads (the calling thread is one of
// them). replicate: one thread creates a task per result, each writing its
// own place of a vector sized first; map: `parallel for` with
// schedule(dynamic), since the elements' costs grow with the index.
#include "collect/collect.hpp"

namespace {

namespace co = bench::collect;

// n tasks, task i storing f() at place i.
template <class F>
co::results replicate(std::size_t n, F f) {
  co::results r(n);
  co::value* out = r.data();
  const auto count = static_cast<std::int64_t>(n);
#pragma omp parallel num_threads(bench::workers)
#pragma omp single
  for (std::int64_t i = 0; i < count; ++i) {
#pragma omp task firstprivate(i) shared(f)
    out[i] = f();
  }
  return r;
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  co::add_replicate_fib("task", [] {
    return
        [] { return replicate(co::replicate_jobs, [] { return co::fib(co::replicate_fib_n); }); };
  });
  co::add_replicate_sum("task", [] {
    return [] {
      const std::vector<co::value>& list = co::sum_list();
      return replicate(co::replicate_jobs, [&list] { return co::sum(list); });
    };
  });
  co::add_map_fib("dynamic", [] {
    return [] {
      const std::vector<std::uint64_t>& in = co::fib_inputs();
      co::results r(in.size());
      co::value* out = r.data();
      const auto n = static_cast<std::int64_t>(in.size());
#pragma omp parallel for num_threads(bench::workers) schedule(dynamic)
      for (std::int64_t i = 0; i < n; ++i) out[i] = co::fib(in[static_cast<std::size_t>(i)]);
      return r;
    };
  });
  co::add_map_sum("dynamic", [] {
    return [] {
      const std::vector<std::vector<co::value>>& in = co::sum_lists();
      co::results r(in.size());
      co::value* out = r.data();
      const auto n = static_cast<std::int64_t>(in.size());
#pragma omp parallel for num_threads(bench::workers) schedule(dynamic)
      for (std::int64_t i = 0; i < n; ++i) out[i] = co::sum(in[static_cast<std::size_t>(i)]);
      return r;
    };
  });
});

}  // namespace
