// Timed waits and bound arguments, as std::future and std::async users
// expect: poll a slow job with wait_for while doing other things, pass
// arguments to submit, and bound how long pool.wait_for waits.
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <weft/weft.hpp>

int main() {
  using namespace std::chrono_literals;
  weft::pool pool{{.threads = 2}};

  // submit(f, args...): copies of the arguments, std::ref for a reference.
  auto slow = pool.submit(
      [](int n, const std::string& what) {
        std::this_thread::sleep_for(30ms);
        return what + " x" + std::to_string(n);
      },
      3, std::string{"answer"});
  int polls = 0;
  while (slow.wait_for(5ms) == std::future_status::timeout) ++polls;  // the UI stays live
  const std::string result = slow.get();
  std::printf("%s after %d polls\n", result.c_str(), polls);

  int total = 0;
  for (int i = 1; i <= 4; ++i) {
    pool.spawn([](int& sum, int v) { sum += v; }, std::ref(total), i);
    pool.wait();  // one at a time: `total` is not atomic
  }
  std::printf("total %d\n", total);

  // pool.wait_for: false while a job still runs, true once idle.
  pool.spawn([] { std::this_thread::sleep_for(50ms); });
  const bool idle_early = pool.wait_for(1ms);
  const bool idle_later = pool.wait_for(10s);
  std::printf("idle after 1 ms: %s, within 10 s: %s\n", idle_early ? "yes" : "no",
              idle_later ? "yes" : "no");
  return result == "answer x3" && total == 10 && !idle_early && idle_later ? 0 : 1;
}
