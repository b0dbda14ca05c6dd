// fib: weft, in three shapes, each on a pool of 2 workers. The top-level
// call is submitted as a job so that only the 2 workers compute (the caller
// blocks in get(), as it would in an application).
//   join              weft::join per call
//   task_group        a task_group per call, both children spawned, wait()
//   task_group_run_and_wait
//                     a task_group per call, one child spawned, the other
//                     run here by run_and_wait()
//   spawn_wait_until  seed 000's shape: pool.spawn both children, then
//                     pool.wait_until both have counted down
//   join_traced, task_group_traced
//                     the same on a traced pool (docs/tracing.md; the trace
//                     goes to /dev/null when the pool is destroyed): the cost
//                     of recording every job
//   join_pinned       join, on a pool whose workers are pinned
//                     (pool_options::cpus): one per physical core first, then
//                     the cores' other hardware threads, round-robin when the
//                     workers outnumber the allowed CPUs (issue 10: pinned vs
//                     unpinned)
//   deque_floor_spawn_wait, deque_floor_run_and_wait
//                     no pool: only the deque operations a task_group per
//                     call makes on its home worker's deque, on the calling
//                     thread (the floor of task_group and of
//                     task_group_run_and_wait; docs/design.md)
// join, task_group, task_group_run_and_wait and spawn_wait_until also report
// ns_per_spawn and seq_ms (fib.hpp): issue 13's cost of one spawn.
#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>
#include <weft/detail/deque.hpp>
#include <weft/weft.hpp>

#include "fib/fib.hpp"

namespace {

// Each recursion starts on a cache line: where it landed otherwise moved
// with unrelated code before it in the binary, and fib/30/join ran 10%
// slower when it started 48 bytes into a line (same instructions, by
// callgrind).
[[gnu::aligned(64)]] int fib_join(int n) {
  if (n < 2) return n;
  auto [a, b] = weft::join([n] { return fib_join(n - 1); }, [n] { return fib_join(n - 2); });
  return a + b;
}

[[gnu::aligned(64)]] int fib_group(weft::pool& pool, int n) {
  if (n < 2) return n;
  int a = 0;
  int b = 0;
  weft::task_group g{pool};
  g.spawn([&] { a = fib_group(pool, n - 1); });
  g.spawn([&] { b = fib_group(pool, n - 2); });
  g.wait();
  return a + b;
}

[[gnu::aligned(64)]] int fib_group_run_and_wait(weft::pool& pool, int n) {
  if (n < 2) return n;
  int a = 0;
  int b = 0;
  weft::task_group g{pool};
  g.spawn([&] { a = fib_group_run_and_wait(pool, n - 1); });
  g.run_and_wait([&] { b = fib_group_run_and_wait(pool, n - 2); });
  return a + b;
}

[[gnu::aligned(64)]] int fib_spawn(weft::pool& pool, int n) {
  if (n < 2) return n;
  int a = 0;
  int b = 0;
  std::atomic<int> done{0};
  // Each release pairs with the acquire in the predicate: the child's write
  // to a or b happens-before the parent reads it.
  pool.spawn([&] {
    a = fib_spawn(pool, n - 1);
    done.fetch_add(1, std::memory_order_release);
  });
  pool.spawn([&] {
    b = fib_spawn(pool, n - 2);
    done.fetch_add(1, std::memory_order_release);
  });
  pool.wait_until([&] { return done.load(std::memory_order_acquire) == 2; });
  return a + b;
}

// The deque operations alone of a task_group per call, on the calling
// thread with no pool: what the home's spawns and wait() do to its deque
// (docs/design.md, "A task_group on its home worker"), as a floor for the
// two shapes above. The items are dummies; the recursion returns fib(n).
struct floor_item : weft::detail::job {};

class deque_floor {
 public:
  // spawn + spawn + wait(): two private pushes; the take of the newer one
  // publishes the older (docs/deque.md, "Idle workers"), which is then
  // popped from the public part.
  int spawn_wait(int n) {
    if (n < 2) return n;
    deque_.push_private(&items_[0]);
    deque_.push_private(&items_[1]);
    weft::detail::job* second = deque_.pop();
    deque_.publish_all();
    const int b = spawn_wait(n - 2);
    weft::detail::job* first = deque_.pop();
    const int a = spawn_wait(n - 1);
    return a + b + (first == second ? 1 : 0);
  }
  // spawn + run_and_wait(): one private push, taken back after the piece
  // run here, publishing what is below it.
  int run_and_wait(int n) {
    if (n < 2) return n;
    deque_.push_private(&items_[0]);
    const int b = run_and_wait(n - 2);
    weft::detail::job* first = deque_.pop();
    deque_.publish_all();
    const int a = run_and_wait(n - 1);
    return a + b + (first == nullptr ? 1 : 0);
  }

 private:
  weft::detail::work_deque<weft::detail::job*> deque_;
  floor_item items_[2];
};

std::unique_ptr<weft::pool> make_pool() {
  return std::make_unique<weft::pool>(weft::pool_options{.threads = bench::workers});
}

std::unique_ptr<weft::pool> make_traced_pool() {
  return std::make_unique<weft::pool>(
      weft::pool_options{.threads = bench::workers, .trace = "/dev/null"});
}

// The allowed CPUs, one per physical core first.
std::vector<int> cores_first() {
  std::vector<int> cpus = weft::cpus_one_per_core();
  for (const int cpu : weft::allowed_cpus()) {
    if (std::find(cpus.begin(), cpus.end(), cpu) == cpus.end()) cpus.push_back(cpu);
  }
  return cpus;
}

std::unique_ptr<weft::pool> make_pinned_pool() {
  return std::make_unique<weft::pool>(
      weft::pool_options{.threads = bench::workers, .cpus = cores_first()});
}

auto setup_join() {
  return [pool = make_pool()](int n) { return pool->submit([n] { return fib_join(n); }).get(); };
}

auto setup_group() {
  return [pool = make_pool()](int n) {
    return pool->submit([&pool = *pool, n] { return fib_group(pool, n); }).get();
  };
}

auto setup_group_run_and_wait() {
  return [pool = make_pool()](int n) {
    return pool->submit([&pool = *pool, n] { return fib_group_run_and_wait(pool, n); }).get();
  };
}

auto setup_join_traced() {
  return [pool = make_traced_pool()](int n) {
    return pool->submit([n] { return fib_join(n); }).get();
  };
}

auto setup_group_traced() {
  return [pool = make_traced_pool()](int n) {
    return pool->submit([&pool = *pool, n] { return fib_group(pool, n); }).get();
  };
}

auto setup_join_pinned() {
  return [pool = make_pinned_pool()](int n) {
    return pool->submit([n] { return fib_join(n); }).get();
  };
}

auto setup_spawn() {
  return [pool = make_pool()](int n) {
    return pool->submit([&pool = *pool, n] { return fib_spawn(pool, n); }).get();
  };
}

auto setup_floor_spawn_wait() {
  return [floor = std::make_shared<deque_floor>()](int n) { return floor->spawn_wait(n); };
}

auto setup_floor_run_and_wait() {
  return [floor = std::make_shared<deque_floor>()](int n) { return floor->run_and_wait(n); };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  using bench::fib::counters;
  bench::fib::add_timing("join", setup_join, counters::ns_per_spawn);
  bench::fib::add_timing("task_group", setup_group, counters::ns_per_spawn);
  bench::fib::add_timing("task_group_run_and_wait", setup_group_run_and_wait,
                         counters::ns_per_spawn);
  bench::fib::add_timing("spawn_wait_until", setup_spawn, counters::ns_per_spawn);
  bench::fib::add_timing("join_traced", setup_join_traced);
  bench::fib::add_timing("task_group_traced", setup_group_traced);
  bench::fib::add_timing("join_pinned", setup_join_pinned);
  bench::fib::add_timing("deque_floor_spawn_wait", setup_floor_spawn_wait);
  bench::fib::add_timing("deque_floor_run_and_wait", setup_floor_run_and_wait);
});
const int peak_rss = bench::on_startup(bench::suite::peak_rss, [] {
  bench::fib::add_peak_rss("join", setup_join);
  bench::fib::add_peak_rss("task_group", setup_group);
  bench::fib::add_peak_rss("spawn_wait_until", setup_spawn);
});

}  // namespace
