// Tiled Cholesky: oneTBB flow graph in a task_arena of 2. One continue_node
// per task; the edges come from the known access pattern, built while
// walking the tasks in program order: a task follows the last writer of
// every tile it reads or writes (read after write, write after write) and
// every reader of the tile it writes since that tile's last write (write
// after read). The graph is built, then its roots are started and the
// caller waits with wait_for_all, all inside the timed region. BLAS on one
// thread.
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "cholesky/cholesky.hpp"

namespace {

namespace flow = tbb::flow;
using node = flow::continue_node<flow::continue_msg>;
using bench::cholesky::tile;
using bench::cholesky::tiled_matrix;

struct tile_state {
  node* last_writer = nullptr;
  std::vector<node*> readers;  // since the last write
};

void build_and_run(tiled_matrix& m) {
  flow::graph g;
  std::deque<node> nodes;  // stable addresses
  std::vector<node*> roots;
  std::unordered_map<const tile*, tile_state> tiles;
  std::vector<node*> preds;

  bench::cholesky::for_each_task(m.nt(), [&](const bench::cholesky::task& t) {
    const bench::cholesky::accesses a = bench::cholesky::accesses_of(m, t);
    node& n =
        nodes.emplace_back(g, [&m, t](const flow::continue_msg&) { bench::cholesky::run(m, t); });

    preds.clear();
    for (int r = 0; r < a.reads; ++r) {
      const tile_state& s = tiles[a.read[r]];
      if (s.last_writer != nullptr) preds.push_back(s.last_writer);
    }
    tile_state& w = tiles[a.write];
    if (w.last_writer != nullptr) preds.push_back(w.last_writer);
    preds.insert(preds.end(), w.readers.begin(), w.readers.end());
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    // No task reads the tile it writes, so none is its own predecessor.
    for (node* p : preds) flow::make_edge(*p, n);
    if (preds.empty()) roots.push_back(&n);

    for (int r = 0; r < a.reads; ++r) tiles[a.read[r]].readers.push_back(&n);
    w.last_writer = &n;
    w.readers.clear();
  });

  for (node* root : roots) root->try_put(flow::continue_msg());
  g.wait_for_all();
}

auto setup(int /*b*/) {
  bench::cholesky::set_blas_threads(1);
  auto arena = std::make_shared<tbb::task_arena>(bench::workers);
  arena->initialize();
  return [arena](tiled_matrix& m) { arena->execute([&m] { build_and_run(m); }); };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::cholesky::add("flow_graph", setup); });

}  // namespace
