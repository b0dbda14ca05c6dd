// Results in spawn order and early termination: the Haskell scheduler's
// withScheduler and terminateWith. 26 jobs look at the letters a..z; the
// one at position 10 ends the whole collection with its letter, so the
// jobs not started yet are skipped and collect returns just {'j'}. Without
// a terminator, collect returns every job's result in spawn order.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 8, .name = "letters"}};

  // Find the 10th letter of the alphabet, in parallel.
  const std::vector<char> found = weft::collect<char>(pool, [](weft::collector<char>& c) {
    for (int i = 1; i <= 26; ++i) {
      const char letter = static_cast<char>('a' + i - 1);
      c.spawn([i, letter](weft::collector<char>& cc) {
        if (i == 10) {
          cc.terminate_with(letter);  // skips the jobs that have not started
        } else if (!cc.stop_requested()) {
          std::this_thread::sleep_for(std::chrono::milliseconds{1});
        }
        return letter;
      });
    }
  });

  // Results in the order the jobs were spawned, whichever finished first.
  const std::vector<int> sums = weft::collect<int>(pool, [](weft::collector<int>& c) {
    for (int k = 1; k <= 5; ++k) c.spawn([k] { return k * 10 + k; });
  });

  std::printf("found: %s; sums: %d %d %d %d %d\n", std::string(found.begin(), found.end()).c_str(),
              sums[0], sums[1], sums[2], sums[3], sums[4]);
  const bool ok = found == std::vector<char>{'j'} && sums == std::vector<int>{11, 22, 33, 44, 55};
  return ok ? 0 : 1;
}
