// Pause, resume and purge: a pool paused while a batch is queued starts
// none of it; purge() then drops what is still queued, so a cancelled
// request costs nothing but the submission, and the futures of the dropped
// jobs say so with weft::job_cancelled.
#include <atomic>
#include <cstdio>
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 2}};
  std::atomic<int> ran{0};

  // Queue a first batch while paused: nothing starts.
  pool.pause();
  std::vector<weft::future<int>> first;
  first.reserve(8);
  for (int i = 0; i < 8; ++i) first.push_back(pool.submit([&ran, i] { return ++ran, i * i; }));
  std::printf("paused: %s, jobs run so far: %d\n", pool.paused() ? "yes" : "no", ran.load());

  // The request was withdrawn: drop the batch. wait() returns though the
  // pool is still paused, since nothing is left to run.
  const std::size_t dropped = pool.purge();
  int cancelled = 0;
  for (auto& f : first) {
    try {
      (void)f.get();
    } catch (const weft::job_cancelled&) {
      ++cancelled;
    }
  }
  pool.wait();
  std::printf("purged %zu jobs, %d futures said job_cancelled, %d ran\n", dropped, cancelled,
              ran.load());

  // Resume and go on as usual.
  pool.resume();
  auto answer = pool.submit([] { return 42; });
  const std::size_t in_stats = pool.stats().cancelled;
  std::printf("after resume: %d (cancelled in stats: %zu)\n", answer.get(), in_stats);
  // purge() counts what it dropped itself; a job a worker was taking just
  // as the pool paused is dropped by that worker, and counted in stats.
  return dropped <= 8 && cancelled == 8 && in_stats == 8 && ran.load() == 0 ? 0 : 1;
}
