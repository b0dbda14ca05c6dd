// Per-task costs of a oneTBB flow graph (flow_overhead.hpp), in a
// task_arena of `workers` threads (the caller and workers - 1 TBB workers).
// A task is a continue_node. One with accesses gets an edge from the last
// node that wrote each of its resources (the benchmark computes the
// dependencies, as a flow-graph user must); since an edge from a node that
// may already have finished would never fire, those nodes are only built
// by emplace and started (the ones without predecessors) by wait(), which
// then calls wait_for_all: `deferred`. A task without accesses is started
// at once with try_put.
//
// flow_latency uses task_arena::enqueue from outside the arena, as in
// wake_latency/tbb.cpp: a node put from the caller inside the arena would
// go to the caller's own deque, and the caller would run it itself in
// wait_for_all.
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <deque>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/completion.hpp"
#include "flow_overhead/flow_overhead.hpp"

namespace {

namespace flow = tbb::flow;
using node = flow::continue_node<flow::continue_msg>;
using bench::flow_overhead::clock;
using bench::flow_overhead::resource;

class tbb_library {
 public:
  tbb_library(int workers, std::size_t /*max_unfinished*/) : arena_(workers) {
    arena_.initialize();
  }

  int status() const { return 0; }
  int workers() const { return arena_.max_concurrency(); }
  int helpers() const { return arena_.max_concurrency() - 1; }
  static constexpr bool deferred = true;

  // The graph is made inside the arena, so that its tasks run there.
  template <class F>
  void run(const F& f) {
    arena_.execute([&] {
      flow::graph g;
      graph_ = &g;
      f();
      nodes_.clear();
      graph_ = nullptr;
    });
  }

  template <class F>
  void emplace(F body, resource* const* r, int n) {
    node& added = nodes_.emplace_back(*graph_, [body](const flow::continue_msg&) { body(); });
    preds_.clear();
    for (int k = 0; k < n; ++k) {
      node*& last = last_writer_[r[k]];
      if (last != nullptr) preds_.push_back(last);
      last = &added;
    }
    std::sort(preds_.begin(), preds_.end());
    preds_.erase(std::unique(preds_.begin(), preds_.end()), preds_.end());
    for (node* p : preds_) flow::make_edge(*p, added);
    if (preds_.empty()) roots_.push_back(&added);
  }

  template <class F>
  void emplace_free(F body) {
    node& added = nodes_.emplace_back(*graph_, [body](const flow::continue_msg&) { body(); });
    added.try_put(flow::continue_msg());
  }

  void wait() {
    for (node* root : roots_) root->try_put(flow::continue_msg());
    graph_->wait_for_all();
    roots_.clear();
    last_writer_.clear();
    nodes_.clear();
  }

 private:
  tbb::task_arena arena_;
  flow::graph* graph_ = nullptr;
  std::deque<node> nodes_;  // stable addresses
  std::vector<node*> roots_;
  std::unordered_map<const resource*, node*> last_writer_;
  std::vector<node*> preds_;
};

void latency(benchmark::State& state, bool idle) {
  tbb::task_arena arena(bench::workers);
  arena.initialize();
  const std::thread::id caller = std::this_thread::get_id();
  bool elsewhere = false;  // written by the job before it publishes
  bench::completion done;
  auto hand_over = [&](clock::time_point* started) {
    arena.enqueue([&, started] {
      *started = clock::now();
      elsewhere = std::this_thread::get_id() != caller;
      done.publish();
      done.depart();
    });
    done.issue();
    done.await();
    return elsewhere;
  };
  bench::flow_overhead::latency(state, hand_over, idle);
  done.drain();
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::flow_overhead::add_emplace<tbb_library>("flow_graph");
  bench::flow_overhead::add_gap<tbb_library>("flow_graph");
  bench::flow_overhead::add_overhead<tbb_library>("flow_graph");
  bench::flow_overhead::add_latency("arena_enqueue", latency);
});

}  // namespace
