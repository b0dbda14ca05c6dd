// Submit jobs with and without results, then wait for all of them (seed 000's
// Submit/Wait, with futures on top).
#include <atomic>
#include <cstdio>
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 2, .name = "example"}};

  std::atomic<int> done{0};
  for (int i = 0; i < 100; ++i) pool.spawn([&] { done.fetch_add(1); });

  std::vector<weft::future<int>> squares;
  squares.reserve(10);
  for (int i = 0; i < 10; ++i) squares.push_back(pool.submit([i] { return i * i; }));

  pool.wait();  // every spawned job has finished
  int sum = 0;
  for (auto& f : squares) sum += f.get();  // results in submission order

  std::printf("%d detached jobs ran; sum of squares 0..9 = %d\n", done.load(), sum);
  return done.load() == 100 && sum == 285 ? 0 : 1;
}
