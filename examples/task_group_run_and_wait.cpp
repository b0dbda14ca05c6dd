// Fork-join with a task_group: spawn one piece, run the other here with
// run_and_wait() (which then waits for the group). A piece that throws
// cancels the pieces that have not started, and the exception comes out of
// run_and_wait().
#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <weft/weft.hpp>

long count_leaves(weft::pool& pool, int depth) {
  if (depth == 0) return 1;
  long left = 0;
  long right = 0;
  weft::task_group g{pool};
  g.spawn([&] { left = count_leaves(pool, depth - 1); });
  g.run_and_wait([&] { right = count_leaves(pool, depth - 1); });
  return left + right;
}

int main() {
  weft::pool pool{{.threads = 2}};
  const long leaves = pool.submit([&] { return count_leaves(pool, 20); }).get();
  std::printf("a binary tree of depth 20 has %ld leaves\n", leaves);
  if (leaves != (1L << 20)) return 1;

  weft::task_group g{pool};
  std::atomic<bool> spawned_ran{false};
  g.spawn([&] { spawned_ran = true; });
  try {
    g.run_and_wait([] { throw std::runtime_error("the piece run here failed"); });
  } catch (const std::runtime_error& e) {
    // The spawned piece ran if a worker took it before the failure, else
    // the cancellation skipped it.
    std::printf("caught '%s'; the spawned piece %s\n", e.what(),
                spawned_ran ? "ran" : "was skipped");
    return 0;
  }
  std::puts("the exception was lost");
  return 1;
}
