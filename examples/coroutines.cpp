// Coroutines on a weft pool: a fork-join fib with co_await weft::join, a
// coroutine that awaits a task graph's run and a submitted job's future,
// one that awaits a data-flow task, and one that sleeps on the pool's
// timers. While a coroutine waits it
// holds no worker and no thread; it resumes as a job of its pool.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <weft/weft.hpp>

namespace {

weft::coro<std::uint64_t> fib(int n) {
  if (n < 2) co_return static_cast<std::uint64_t>(n);
  // Both children may run in parallel: the second waits on this worker's
  // deque, where an idle worker may steal it.
  auto [a, b] = co_await weft::join(fib(n - 1), fib(n - 2));
  co_return a + b;
}

weft::coro<int> graph_then_job(weft::pool& pool, weft::graph& g, const int& product) {
  co_await pool.run(g);  // the coroutine is suspended while the graph runs
  const int doubled = co_await pool.submit([&product] { return 2 * product; });
  co_return doubled;
}

// Emplaces a small data flow and awaits one of its tasks: the coroutine
// resumes once that task (and what it depends on) has finished, while the
// flow's later tasks may still run.
weft::coro<int> flow_steps(weft::pool& pool) {
  weft::flow f{pool};
  int a = 0;
  int b = 0;
  int sum = 0;
  f.emplace([](int& x) { x = 20; }, weft::write(a));
  f.emplace([](int& x) { x = 22; }, weft::write(b));
  const weft::flow_task add = f.emplace([](const int& x, const int& y, int& s) { s = x + y; },
                                        weft::read(a), weft::read(b), weft::write(sum));
  f.emplace([](int& x) { x = 0; }, weft::write(a));  // after add: it reads a
  co_await add;  // a task that threw would be rethrown here (and by f.wait())
  const int seen = sum;
  f.wait();
  co_return seen;
}

weft::coro<int> ticks(int n) {
  int done = 0;
  for (int i = 0; i < n; ++i) {
    co_await weft::sleep_for(std::chrono::milliseconds(2));  // no thread is held
    ++done;
  }
  co_return done;
}

}  // namespace

int main() {
  weft::pool pool{{.threads = 2}};

  const std::uint64_t f = weft::sync_wait(pool, fib(25));
  std::printf("fib(25) = %llu\n", static_cast<unsigned long long>(f));

  weft::graph g;
  int a = 0;
  int b = 0;
  int product = 0;
  auto get_a = g.emplace([&] { a = 6; });
  auto get_b = g.emplace([&] { b = 7; });
  auto multiply = g.emplace([&] { product = a * b; });
  multiply.succeed(get_a, get_b);
  const int doubled = weft::sync_wait(pool, graph_then_job(pool, g, product));
  std::printf("graph product %d, doubled by a job: %d\n", product, doubled);

  const int summed = weft::sync_wait(pool, flow_steps(pool));
  std::printf("a flow task summed %d\n", summed);

  // Started and forgotten: pool.wait() waits for it while it sleeps.
  weft::spawn(pool, ticks(5));
  weft::future<int> timed = weft::submit(pool, ticks(3));
  pool.wait();
  const int ticked = timed.get();
  std::printf("ticked %d times\n", ticked);

  return f == 75025 && doubled == 84 && summed == 42 && ticked == 3 ? 0 : 1;
}
