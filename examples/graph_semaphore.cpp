// A semaphore limiting a graph's tasks (Taskflow's tf::Semaphore): eight
// download tasks share a connection pool of two, so at most two download
// at once, while the parsing tasks, which need no connection, keep the other
// workers busy. A task waiting for a connection holds no worker.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 4}};
  weft::graph g;
  weft::semaphore connections{2};
  std::atomic<int> downloading{0};
  std::atomic<int> most{0};
  std::atomic<int> parsed{0};

  for (int i = 0; i < 8; ++i) {
    auto download = g.emplace([&] {
                       const int now = downloading.fetch_add(1) + 1;
                       int seen = most.load();
                       while (seen < now && !most.compare_exchange_weak(seen, now)) {
                       }
                       std::this_thread::sleep_for(std::chrono::milliseconds{2});
                       downloading.fetch_sub(1);
                     })
                        .acquire(connections)
                        .release(connections);
    auto parse = g.emplace([&] { parsed.fetch_add(1); });
    download.precede(parse);
  }
  pool.run(g).get();
  std::printf("8 downloads, at most %d at once (limit 2); %d parsed\n", most.load(), parsed.load());
  return most.load() <= 2 && parsed.load() == 8 ? 0 : 1;
}
