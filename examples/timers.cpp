// Timers: a timeout that is cancelled when the work beats it, a heartbeat
// every few milliseconds that stops itself, and a deadline on the system
// clock. Nothing spins while they wait: the pool's timer thread sleeps
// until the earliest deadline, then hands the job to a worker.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <weft/weft.hpp>

int main() {
  using namespace std::chrono_literals;
  weft::pool pool{{.threads = 2}};

  // A timeout for a request: cancelled when the answer comes first.
  std::atomic<bool> timed_out{false};
  weft::timer timeout = pool.spawn_after(2s, [&] { timed_out = true; });
  auto answer = pool.submit([] { return 42; });
  const int value = answer.get();
  const bool cancelled = timeout.cancel();  // true: the timeout will never run
  std::printf("answer %d, timeout cancelled: %s\n", value, cancelled ? "yes" : "no");

  // A heartbeat every 5 ms that stops itself after 4 beats, through the
  // weft::timer& its callable may take.
  std::atomic<int> beats{0};
  pool.spawn_every(5ms, [&](weft::timer& self) {
    if (beats.fetch_add(1) + 1 == 4) self.cancel();
  });

  // A deadline on another clock, converted once to the steady clock.
  std::atomic<bool> reminded{false};
  pool.spawn_at(std::chrono::system_clock::now() + 10ms, [&] { reminded = true; });

  // pool.wait() waits for the timers that have fired, not for those still
  // waiting; wait_until runs until the predicate holds.
  pool.wait_until([&] { return beats.load() == 4 && reminded.load(); });
  pool.wait();
  std::printf("heartbeat: %d beats, reminder: %s\n", beats.load(), reminded ? "yes" : "no");

  // A timer still waiting when the pool is destroyed never runs.
  pool.spawn_after(1h, [] { std::puts("never printed"); });
  return value == 42 && cancelled && !timed_out && beats == 4 ? 0 : 1;
}
