// A failing job cancels the rest of its group, and wait() rethrows the
// exception (seed 002's "one failing job cancels the rest").
#include <atomic>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 2}};
  weft::task_group group{pool};
  std::atomic<int> finished{0};
  for (int i = 0; i < 1000; ++i) {
    group.spawn([&, i] {
      if (i == 3) throw std::runtime_error("job 3 failed");
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
      finished.fetch_add(1);
    });
  }
  try {
    group.wait();
  } catch (const std::runtime_error& e) {
    std::printf("caught '%s'; %d of 999 other jobs ran before the cancellation\n", e.what(),
                finished.load());
    return finished.load() < 999 ? 0 : 1;
  }
  std::puts("the exception was lost");
  return 1;
}
