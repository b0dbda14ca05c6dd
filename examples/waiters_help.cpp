// pool_options::waiters_help: the main thread, waiting for a batch of small
// jobs it submitted, runs those that no worker has taken yet instead of only
// waiting for the workers (docs/waiting.md, "Outside waits").
#include <atomic>
#include <cstdio>
#include <thread>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 2, .waiters_help = true}};
  const std::thread::id main_thread = std::this_thread::get_id();
  std::atomic<int> by_main{0};
  std::atomic<int> total{0};
  constexpr int jobs = 10'000;
  for (int i = 0; i < jobs; ++i) {
    pool.spawn([&] {
      if (std::this_thread::get_id() == main_thread) by_main.fetch_add(1);
      total.fetch_add(1);
    });
  }
  pool.wait();  // runs some of the 10,000 jobs here, the workers the rest
  std::printf("%d jobs ran, %d of them on the waiting main thread\n", total.load(), by_main.load());
  return total.load() == jobs ? 0 : 1;
}
