// Subflows (Taskflow's dynamic tasking): how much work there is is known
// only while the graph runs. A directory walk is a subflow task that adds
// one task per entry, and one subflow per subdirectory, recursively; the
// report task after it starts once the whole walk has finished. No worker
// waits for a subflow: the task that builds one returns at once.
#include <atomic>
#include <cstdio>
#include <weft/weft.hpp>

namespace {

// A made-up tree, four levels deep: directory d has d.id % 4 + 1
// subdirectories and 10 files.
struct directory {
  int id;
  int depth;
};

void walk(weft::subflow& sf, directory d, std::atomic<long>& bytes, std::atomic<int>& dirs) {
  dirs.fetch_add(1);
  for (int file = 0; file < 10; ++file) {
    sf.emplace([&bytes, d, file] { bytes.fetch_add(100L * (d.id % 7 + 1) + file); });
  }
  if (d.depth == 4) return;
  for (int k = 0; k < d.id % 4 + 1; ++k) {
    const directory child{d.id * 4 + k + 1, d.depth + 1};
    sf.emplace([child, &bytes, &dirs](weft::subflow& s) { walk(s, child, bytes, dirs); });
  }
}

// The same walk, one thread, for the check.
void count(directory d, long& bytes, int& dirs) {
  ++dirs;
  for (int file = 0; file < 10; ++file) bytes += 100L * (d.id % 7 + 1) + file;
  if (d.depth == 4) return;
  for (int k = 0; k < d.id % 4 + 1; ++k) count({d.id * 4 + k + 1, d.depth + 1}, bytes, dirs);
}

}  // namespace

int main() {
  weft::pool pool{{.threads = 2}};
  weft::graph g;
  std::atomic<long> bytes{0};
  std::atomic<int> dirs{0};
  long reported = 0;
  auto scan = g.emplace([&](weft::subflow& sf) { walk(sf, {0, 0}, bytes, dirs); }).name("scan");
  auto report = g.emplace([&] { reported = bytes.load(); }).name("report");
  scan.precede(report);
  pool.run(g).get();

  long want_bytes = 0;
  int want_dirs = 0;
  count({0, 0}, want_bytes, want_dirs);
  std::printf("%d directories, %ld bytes (report saw %ld)\n", dirs.load(), bytes.load(), reported);
  const bool ok = dirs.load() == want_dirs && reported == want_bytes;
  std::printf("%s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
