// Skynet with weft::join_each: every node forks its ten children and sums
// what they return. join_each(n, f) is the n-way join: f(0) .. f(n - 1),
// possibly in parallel, no allocation, and far cheaper than a task_group
// with n spawns when nothing is cancelled and no child waits for another.
#include <array>
#include <cstdint>
#include <cstdio>
#include <weft/weft.hpp>

// The sum of the leaves below node `num`, `levels` levels above them.
std::int64_t skynet(std::int64_t num, int levels) {
  if (levels == 0) return num;
  std::array<std::int64_t, 10> sums{};  // one place per child: no sharing
  weft::join_each(sums.size(), [&sums, num, levels](std::size_t i) {
    sums[i] = skynet(num * 10 + static_cast<std::int64_t>(i), levels - 1);
  });
  std::int64_t sum = 0;
  for (const std::int64_t s : sums) sum += s;
  return sum;
}

int main() {
  weft::pool pool{{.threads = 2}};
  const int levels = 5;  // 100,000 leaves, 111,111 nodes
  const std::int64_t sum = pool.submit([] { return skynet(0, levels); }).get();
  const std::int64_t leaves = 100'000;
  std::printf("skynet(%lld) = %lld\n", static_cast<long long>(leaves), static_cast<long long>(sum));
  return sum == leaves * (leaves - 1) / 2 ? 0 : 1;
}
