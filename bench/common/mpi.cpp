#include "common/mpi.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "common/registry.hpp"

namespace bench::mpi {
namespace {

int my_rank = 0;
int rank_count = 1;
MPI_Comm harness_comm = MPI_COMM_NULL;

std::atomic<std::uint64_t> bytes_sent{0};
std::atomic<std::uint64_t> messages_sent{0};

// Called by every send below, from any thread.
void count_send(int count, MPI_Datatype type, int dest, MPI_Comm comm) noexcept {
  if (dest == MPI_PROC_NULL) return;
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  int me = -1;
  PMPI_Comm_rank(comm, &me);
  if (inter == 0 && dest == me) return;
  int size = 0;
  PMPI_Type_size(type, &size);
  bytes_sent.fetch_add(static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(size),
                       std::memory_order_relaxed);
  messages_sent.fetch_add(1, std::memory_order_relaxed);
}

class silent_reporter final : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context& /*context*/) override { return true; }
  void ReportRuns(const std::vector<Run>& /*runs*/) override {}
};

// The value of `arg` if it is `--flag` or `--flag=value` ("" for the
// former), else nullptr.
const char* flag_value(std::string_view arg, std::string_view flag) {
  if (arg.substr(0, flag.size()) != flag) return nullptr;
  if (arg.size() == flag.size()) return "";
  return arg[flag.size()] == '=' ? arg.data() + flag.size() + 1 : nullptr;
}

// Google Benchmark's reading of a boolean flag: true unless the value is
// one of 0, f, n, false, no, off (in any case); "--flag" alone is true.
bool set(std::string_view arg, std::string_view flag) {
  const char* value = flag_value(arg, flag);
  if (value == nullptr) return false;
  std::string v(value);
  std::transform(v.begin(), v.end(), v.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return v != "0" && v != "f" && v != "n" && v != "false" && v != "no" && v != "off";
}

bool nonzero(std::string_view arg, std::string_view flag) {
  const char* value = flag_value(arg, flag);
  return value != nullptr && std::strtod(value, nullptr) != 0.0;
}

}  // namespace

session::session(int& argc, char**& argv) {
  std::string diverging;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (set(arg, "--benchmark_list_tests")) return;
    if (set(arg, "--benchmark_enable_random_interleaving") ||
        nonzero(arg, "--benchmark_min_warmup_time")) {
      diverging = arg;
    }
  }
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  started_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &rank_count);
  std::string error;
  if (provided < MPI_THREAD_MULTIPLE) {
    error = "this MPI does not provide MPI_THREAD_MULTIPLE";
  } else if (!diverging.empty() && rank_count > 1) {
    error = diverging + " would make the ranks run different benchmarks or iterations";
  }
  if (!error.empty()) {
    if (my_rank == 0) std::fprintf(stderr, "%s: %s\n", argv[0], error.c_str());
    MPI_Finalize();
    std::exit(2);
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &harness_comm);
  if (my_rank == 0) return;
  // Only rank 0 writes the --benchmark_out file.
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (flag_value(arg, "--benchmark_out") == nullptr &&
        flag_value(arg, "--benchmark_out_format") == nullptr) {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  argv[argc] = nullptr;
}

session::~session() {
  if (!started_) return;
  MPI_Comm_free(&harness_comm);
  MPI_Finalize();
}

benchmark::BenchmarkReporter* session::display_reporter() {
  static silent_reporter silent;
  return my_rank == 0 ? nullptr : &silent;
}

int session::add_context() const {
  benchmark::AddCustomContext("ranks", std::to_string(rank_count));
  benchmark::AddCustomContext("workers_per_rank", std::to_string(workers_per_rank()));
  if (started_) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string text(version, static_cast<std::size_t>(length));
    text.resize(std::min(text.find_first_of(",\n"), text.size()));
    benchmark::AddCustomContext("mpi_library", text);
  }
  return rank_count * workers_per_rank();
}

int rank() noexcept { return my_rank; }
int ranks() noexcept { return rank_count; }
MPI_Comm harness() noexcept { return harness_comm; }

int workers_per_rank() noexcept { return std::max(1, bench::workers / rank_count); }

traffic sent() noexcept {
  return {bytes_sent.load(std::memory_order_relaxed),
          messages_sent.load(std::memory_order_relaxed)};
}

}  // namespace bench::mpi

// MPI's profiling interface: these definitions replace libmpi's MPI_* for
// the whole process, and the PMPI_* names reach libmpi's own.
#define WEFT_BENCH_COUNTED_SEND(name)                                                         \
  extern "C" int MPI_##name(const void* buf, int count, MPI_Datatype type, int dest, int tag, \
                            MPI_Comm comm) {                                                  \
    bench::mpi::count_send(count, type, dest, comm);                                          \
    return PMPI_##name(buf, count, type, dest, tag, comm);                                    \
  }
#define WEFT_BENCH_COUNTED_ISEND(name)                                                        \
  extern "C" int MPI_##name(const void* buf, int count, MPI_Datatype type, int dest, int tag, \
                            MPI_Comm comm, MPI_Request* request) {                            \
    bench::mpi::count_send(count, type, dest, comm);                                          \
    return PMPI_##name(buf, count, type, dest, tag, comm, request);                           \
  }

WEFT_BENCH_COUNTED_SEND(Send)
WEFT_BENCH_COUNTED_SEND(Bsend)
WEFT_BENCH_COUNTED_SEND(Ssend)
WEFT_BENCH_COUNTED_SEND(Rsend)
WEFT_BENCH_COUNTED_ISEND(Isend)
WEFT_BENCH_COUNTED_ISEND(Ibsend)
WEFT_BENCH_COUNTED_ISEND(Issend)
WEFT_BENCH_COUNTED_ISEND(Irsend)
