// Which worker runs a job: this_worker::index() is 0..size()-1 on a worker and
// empty elsewhere (seed 002's worker ids).
#include <cstdio>
#include <optional>
#include <set>
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 2}};
  std::vector<weft::future<std::optional<std::size_t>>> ids;
  ids.reserve(16);
  for (int i = 0; i < 16; ++i)
    ids.push_back(pool.submit([] { return weft::this_worker::index(); }));
  std::set<std::size_t> seen;
  for (auto& f : ids) {
    const auto id = f.get();
    if (!id || *id >= pool.size()) return 1;
    seen.insert(*id);
  }
  std::printf("%zu workers; jobs ran on %zu of them; main thread index: %s\n", pool.size(),
              seen.size(), weft::this_worker::index() ? "set" : "empty");
  return weft::this_worker::index() ? 1 : 0;
}
