// A trace of a graph's runs that Perfetto (ui.perfetto.dev) or
// chrome://tracing opens: one track per worker, each task a slice with its
// name, an arrow for each edge that made a task ready, steals and sleeps.
//
//   example_trace_graph [FILE]     (default: trace_graph.json)
//
// The same trace comes from any program, unchanged, with
// WEFT_TRACE=FILE ./program (docs/tracing.md).
#include <cmath>
#include <cstddef>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>
#include <weft/weft.hpp>

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "trace_graph.json";
  constexpr std::size_t chunks = 8;
  constexpr std::size_t chunk_size = 100'000;

  std::vector<double> data(chunks * chunk_size);
  std::vector<double> partial(chunks);
  double total = 0;
  {
    weft::pool pool{{.threads = 2, .name = "traced", .trace = path}};
    weft::graph g;
    auto sum = g.emplace([&] {
                  total = std::accumulate(partial.begin(), partial.end(), 0.0);
                }).name("sum");
    for (std::size_t c = 0; c < chunks; ++c) {
      double* part = data.data() + c * chunk_size;
      auto fill = g.emplace([part, c] {
                     for (std::size_t i = 0; i < chunk_size; ++i) {
                       part[i] = std::sqrt(static_cast<double>(c * chunk_size + i));
                     }
                   }).name("fill " + std::to_string(c));
      auto square = g.emplace([part, &partial, c] {
                       double s = 0;
                       for (std::size_t i = 0; i < chunk_size; ++i) s += part[i] * part[i];
                       partial[c] = s;
                     }).name("square " + std::to_string(c));
      fill.precede(square);
      square.precede(sum);
    }
    for (int run = 0; run < 3; ++run) pool.run(g).get();
    // The trace is written when the pool is destroyed (here, at the end of
    // the block); pool.write_trace(other_path) writes one at any time.
  }
  // The sum of i for i < n, as the squares of sqrt(i): n (n - 1) / 2.
  const double n = chunks * chunk_size;
  const double expected = n * (n - 1) / 2;
  std::cout << "sum " << total << " (expected " << expected << "); trace written to " << path
            << "\n";
  return std::abs(total - expected) <= 1e-9 * expected ? 0 : 1;
}
