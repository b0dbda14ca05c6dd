// A multi-condition task (Taskflow's multi-condition): one task looks at
// each incoming record and returns the indices of the stages it needs; only
// those run, in parallel, and a join task after them sees their results.
// The same graph is rerun for every record.
#include <atomic>
#include <cstdio>
#include <string>
#include <vector>
#include <weft/weft.hpp>

int main() {
  struct record {
    std::string text;
    bool compress, encrypt, index;
  };
  const std::vector<record> records{{"alpha", true, false, true},
                                    {"beta", false, true, false},
                                    {"gamma", true, true, true},
                                    {"delta", false, false, false}};

  weft::pool pool{{.threads = 2}};
  weft::graph g;
  const record* current = nullptr;
  std::atomic<int> stages_run{0};

  // Returns the successors to run: 0 compress, 1 encrypt, 2 index.
  auto route = g.emplace([&] {
                  std::vector<int> stages;
                  if (current->compress) stages.push_back(0);
                  if (current->encrypt) stages.push_back(1);
                  if (current->index) stages.push_back(2);
                  return stages;
                }).name("route");
  auto compress = g.emplace([&] { stages_run.fetch_add(1); }).name("compress");
  auto encrypt = g.emplace([&] { stages_run.fetch_add(1); }).name("encrypt");
  auto index = g.emplace([&] { stages_run.fetch_add(1); }).name("index");
  route.precede(compress, encrypt, index);

  int expected = 0;
  for (const record& r : records) {
    current = &r;
    const int before = stages_run.load();
    pool.run(g).get();
    const int ran = stages_run.load() - before;
    expected += int{r.compress} + int{r.encrypt} + int{r.index};
    std::printf("%-6s ran %d stage(s)\n", r.text.c_str(), ran);
  }
  std::printf("%d stages in all (expected %d)\n", stages_run.load(), expected);
  return stages_run.load() == expected ? 0 : 1;
}
