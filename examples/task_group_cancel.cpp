// A failing job cancels the rest of its group, and wait() rethrows the
// exception (seed 002's "one failing job cancels the rest"); a group
// cancelled with cancel() is no error, and wait() says so.
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
    (void)group.wait();
    std::puts("the exception was lost");
    return 1;
  } catch (const std::runtime_error& e) {
    std::printf("caught '%s'; %d of 999 other jobs ran before the cancellation\n", e.what(),
                finished.load());
    if (finished.load() >= 999) return 1;
  }

  // A search: the first job to find what it looks for cancels the rest.
  std::atomic<int> found{-1};
  for (int i = 0; i < 1000; ++i) {
    group.spawn([&, i] {
      if (i % 97 == 42 && found.exchange(i) == -1) group.cancel();
    });
  }
  const weft::group_status status = group.wait();
  std::printf("found %d; the group was %s\n", found.load(),
              status == weft::group_status::cancelled ? "cancelled" : "complete");
  return status == weft::group_status::cancelled && found.load() % 97 == 42 ? 0 : 1;
}
