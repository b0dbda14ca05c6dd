// Statistics of a data set spread over MPI ranks, with the flow's modes that
// let tasks run in any order: each chunk of samples lives on one rank, and
// every rank keeps a partial result that its own chunks update.
//   - weft::reduce(sum, plus): the chunks' sums go to private copies, folded
//     into the rank's partial sum before anything reads it;
//   - weft::commute(extremes): the chunks' tasks update the rank's min and
//     max one at a time, in whatever order they finish.
// Both run on the owner of what they change, as a write would, so each task
// here runs where its chunk lives and nothing is sent until the last task,
// which reads every rank's partials on rank 0 (the flow sends them there).
//
//   mpirun -np 2 ./example_statistics_mpi    (examples/CMakeLists.txt runs it so)
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>
#include <weft/mpi.hpp>

#include "mpi_main.hpp"

namespace {

constexpr int chunk_size = 4096;
constexpr int chunks_per_rank = 16;

struct chunk {
  std::array<double, chunk_size> samples{};
};
struct extremes {
  double low = 1e300;
  double high = -1e300;
};
struct summary {
  double sum = 0;
  double low = 1e300;
  double high = -1e300;
};

double sample(int c, int k) {
  return static_cast<double>((c * 7919 + k * 104729) % 10007) - 5000.0;
}

int run() {
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int chunks = chunks_per_rank * ranks;
  // Every rank holds an instance of every object; only the owner's is filled.
  std::vector<chunk> data(static_cast<std::size_t>(chunks));
  for (int c = 0; c < chunks; ++c) {
    if (c % ranks != rank) continue;
    for (int k = 0; k < chunk_size; ++k)
      data[static_cast<std::size_t>(c)].samples[k] = sample(c, k);
  }
  std::vector<double> partial_sum(static_cast<std::size_t>(ranks), 0.0);
  std::vector<extremes> partial_extremes(static_cast<std::size_t>(ranks));
  summary result;

  weft::pool pool{{.threads = 2}};
  {
    weft::mpi::flow flow{pool, MPI_COMM_WORLD};
    for (int c = 0; c < chunks; ++c)
      flow.register_data(data[static_cast<std::size_t>(c)], c % ranks);
    for (int r = 0; r < ranks; ++r) {
      flow.register_data(partial_sum[static_cast<std::size_t>(r)], r);
      flow.register_data(partial_extremes[static_cast<std::size_t>(r)], r);
    }
    flow.register_data(result, 0);

    for (int c = 0; c < chunks; ++c) {
      const auto owner = static_cast<std::size_t>(c % ranks);
      const chunk& in = data[static_cast<std::size_t>(c)];
      flow.emplace(
          [](const chunk& x, double& sum) {
            for (double v : x.samples) sum += v;
          },
          weft::read(in),
          weft::reduce(partial_sum[owner], [](double a, double b) { return a + b; }));
      flow.emplace(
          [](const chunk& x, extremes& e) {
            const auto [lo, hi] = std::minmax_element(x.samples.begin(), x.samples.end());
            e.low = std::min(e.low, *lo);
            e.high = std::max(e.high, *hi);
          },
          weft::read(in), weft::commute(partial_extremes[owner]));
    }
    // One task on rank 0 combines the partials; those of other ranks are sent
    // to it once their runs have finished.
    for (int r = 0; r < ranks; ++r) {
      flow.emplace(
          [](const double& s, const extremes& e, summary& out) {
            out.sum += s;
            out.low = std::min(out.low, e.low);
            out.high = std::max(out.high, e.high);
          },
          weft::read(partial_sum[static_cast<std::size_t>(r)]),
          weft::read(partial_extremes[static_cast<std::size_t>(r)]), weft::write(result));
    }
    flow.wait();
    const weft::mpi::flow_stats st = flow.statistics();
    std::printf("rank %d: %llu local tasks, %llu messages received\n", rank,
                static_cast<unsigned long long>(st.local_tasks),
                static_cast<unsigned long long>(st.messages_received));
  }
  if (rank != 0) return 0;

  double sum = 0;
  double low = 1e300;
  double high = -1e300;
  for (int c = 0; c < chunks; ++c) {
    for (int k = 0; k < chunk_size; ++k) {
      sum += sample(c, k);
      low = std::min(low, sample(c, k));
      high = std::max(high, sample(c, k));
    }
  }
  // The samples are integers and their sum is far below 2^53: exact in any order.
  std::printf("sum %.0f (expected %.0f), min %.0f (%.0f), max %.0f (%.0f)\n", result.sum, sum,
              result.low, low, result.high, high);
  return result.sum == sum && result.low == low && result.high == high ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return example::mpi_main(argc, argv, "statistics_mpi", run); }
