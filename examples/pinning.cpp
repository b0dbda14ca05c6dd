// pool_options::cpus: worker i runs on CPU cpus[i % cpus.size()]
// (docs/control.md, "Pinning workers to CPUs"). Lists the CPUs this process
// may use and one per physical core, pins a pool to them, and checks with
// the system (sched_getcpu(), GetCurrentProcessorNumber()) where each
// worker's jobs ran.
#ifdef _WIN32
#include <windows.h>
#else
#include <sched.h>
#endif

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>
#include <weft/weft.hpp>

namespace {

int current_cpu() {
#ifdef _WIN32
  return static_cast<int>(GetCurrentProcessorNumber());
#else
  return sched_getcpu();
#endif
}

std::string list(const std::vector<int>& cpus) {
  std::string text;
  for (const int cpu : cpus) {
    if (!text.empty()) text += ',';
    text += std::to_string(cpu);
  }
  return text;
}

}  // namespace

int main() {
  const std::vector<int> allowed = weft::allowed_cpus();
  const std::vector<int> cores = weft::cpus_one_per_core();
  std::printf("allowed CPUs: %s; one per core: %s\n", list(allowed).c_str(), list(cores).c_str());

  // One worker per physical core; the start hook (after the pinning) sees
  // the worker's CPU.
  std::vector<std::atomic<int>> start_cpu(cores.size());
  weft::pool pool{{.cpus = cores,
                   .on_worker_start = [&](std::size_t i) { start_cpu[i].store(current_cpu()); }}};
  bool ok = pool.size() == cores.size();
  for (std::size_t i = 0; i < pool.size(); ++i) {
    std::printf("worker %zu: pinned to CPU %d, started on CPU %d\n", i, cores[i],
                start_cpu[i].load());
    ok = ok && start_cpu[i].load() == cores[i];
  }

  // Every job runs on its worker's CPU.
  std::atomic<int> misplaced{0};
  for (int k = 0; k < 1000; ++k) {
    pool.spawn([&] {
      const std::size_t i = weft::this_worker::index().value();
      if (i < cores.size() && current_cpu() != cores[i]) misplaced.fetch_add(1);
    });
  }
  pool.wait();
  std::printf("jobs on the wrong CPU: %d\n", misplaced.load());

  // A CPU the process may not use is refused when the pool is made.
  try {
    weft::pool bad{{.cpus = {allowed.back() + 1}}};
    // Only reached on a machine where that CPU is allowed too (never, since
    // allowed is ascending).
    ok = false;
  } catch (const weft::usage_error& e) {
    std::printf("refused: %s\n", e.what());
  }
  return ok && misplaced.load() == 0 ? 0 : 1;
}
