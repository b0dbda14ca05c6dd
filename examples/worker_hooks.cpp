// pool_options::on_worker_start / on_worker_stop: per-thread set-up and
// tear-down, run on each worker's own thread before its first job and after
// its last (docs/control.md, "Worker hooks"). Here each worker gets a
// scratch buffer of its own and a name of the program's choosing, and
// reports how many jobs it ran when the pool shuts down.
#ifndef _WIN32
#include <pthread.h>
#endif

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>
#include <weft/weft.hpp>

namespace {

// Per-thread state the start hook sets up and every job on that worker uses.
thread_local std::vector<double>* scratch = nullptr;
thread_local std::int64_t jobs_run = 0;

}  // namespace

int main() {
  std::atomic<int> started{0};
  std::atomic<std::int64_t> total_jobs{0};
  {
    weft::pool pool{{.threads = 2,
                     .name = "example",
                     .on_worker_start =
                         [&](std::size_t i) {
                           // On worker i's thread, before it runs any job.
                           scratch = new std::vector<double>(1024);
#ifndef _WIN32
                           // (Windows 10 has SetThreadDescription for this.)
                           const std::string name = "solver-" + std::to_string(i);
                           pthread_setname_np(pthread_self(), name.c_str());
#endif
                           // this_worker::index() is valid in the hooks too.
                           if (weft::this_worker::index() == i) started.fetch_add(1);
                         },
                     .on_worker_stop =
                         [&](std::size_t i) {
                           // After the worker's last job, in the destructor.
                           std::printf("worker %zu ran %lld jobs\n", i,
                                       static_cast<long long>(jobs_run));
                           total_jobs.fetch_add(jobs_run);
                           delete scratch;
                           scratch = nullptr;
                         }}};
    // The constructor has waited for every start hook.
    std::printf("%d workers set up\n", started.load());

    std::vector<weft::future<double>> sums;
    sums.reserve(100);
    for (int k = 0; k < 100; ++k) {
      sums.push_back(pool.submit([k] {
        ++jobs_run;
        std::vector<double>& buffer = *scratch;  // this worker's, no lock
        double sum = 0;
        for (std::size_t j = 0; j < buffer.size(); ++j) {
          buffer[j] = static_cast<double>(k) * static_cast<double>(j);
          sum += buffer[j];
        }
        return sum;
      }));
    }
    double total = 0;
    for (auto& s : sums) total += s.get();
    // sum over k of k * (0 + 1 + ... + 1023) = 4950 * 523776
    std::printf("total %.0f\n", total);
    if (total != 4950.0 * 523776.0) return 1;
  }  // the stop hooks run here, one per worker
  std::printf("%lld jobs in all\n", static_cast<long long>(total_jobs.load()));
  return started.load() == 2 && total_jobs.load() == 100 ? 0 : 1;
}
