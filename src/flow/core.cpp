// weft::flow's core object and public handles: construction, dump()
// (keep_graph), and flow, flow_task and after(). docs/flow.md describes
// the modes, the edges and the memory orderings; the producer, the running
// tasks and the waits are in the other files of src/flow/.
#include <cstdio>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

#include "internal.hpp"
#include "weft/flow.hpp"

namespace weft {
namespace detail {

namespace {

const char* mode_name(access_mode m) noexcept {
  switch (m) {
    case access_mode::read:
      return "read";
    case access_mode::write:
      return "write";
    case access_mode::commute:
      return "commute";
    case access_mode::concurrent:
      return "concurrent";
    case access_mode::reduce:
      return "reduce";
  }
  return "?";
}

}  // namespace

std::optional<std::size_t> flow_worker_index(const flow_core& core) noexcept {
  return scheduler::worker_index(core.owner());
}

// ---------------------------------------------------------------------------
// Construction

flow_core::flow_core(pool& p, const flow_options& options)
    : pool_(&p),
      options_(options),
      workers_(scheduler::workers(p)),
      sequential_(scheduler::sequential(p)),
      traced_(scheduler::traced(p)),
      objects_(std::make_unique<object_table>()) {
  if (options_.window != 0 && options_.window < 2) options_.window = 2;
  low_mark_ = options_.window / 2;
}

flow_core::~flow_core() {
  objects_->for_each([](object_state& st) { delete st.reduction; });
  // Nodes keep their successor blocks across reuse.
  for (std::size_t c = 0; c < chunks_.size(); ++c) {
    for (std::size_t i = 0; i < chunk_sizes_[c]; ++i) {
      successor_block* b = chunks_[c][i].more_successors;
      while (b != nullptr) delete std::exchange(b, b->next);
    }
  }
}

// ---------------------------------------------------------------------------
// dump

flow_core::record* flow_core::start_record(flow_node* n, const char* kind) {
  if (!options_.keep_graph) return nullptr;
  records_.push_back(std::make_unique<record>());
  record* r = records_.back().get();
  r->serial = n->serial;
  r->kind = kind;
  return r;
}

void flow_core::set_name(flow_node* n, std::uint32_t generation, std::string_view name) {
  // The producer's own fields (generation, serial): no other thread writes them.
  if (traced_ && n->generation == generation &&
      // Acquire pairs with the release store of `done` in execute(): a
      // finished task's slice is written already.
      n->phase.load(std::memory_order_acquire) != flow_node::done) {
    std::lock_guard lock{trace_names_mutex_};
    trace_names_.insert_or_assign(n->serial, std::string{name});
  }
  if (!options_.keep_graph || n->generation != generation) return;
  const std::uint64_t serial = n->serial;
  // The newest first: a handle is usually named right after emplace.
  const auto it = std::find_if(records_.rbegin(), records_.rend(),
                               [serial](const auto& r) { return r->serial == serial; });
  if (it != records_.rend()) (*it)->name = name;
}

void flow_core::dump(std::ostream& out) const {
  if (!options_.keep_graph) {
    throw usage_error(
        "weft::flow::dump: the flow keeps no graph; construct it with "
        "weft::flow_options{.keep_graph = true}");
  }
  out << "digraph weft_flow {\n";
  for (const auto& r : records_) {
    out << "  t" << r->serial << " [label=\"";
    if (!r->name.empty()) {
      for (char ch : r->name) {
        if (ch == '"' || ch == '\\') out << '\\';
        out << ch;
      }
    } else if (r->kind != nullptr) {
      out << r->kind;
    } else {
      out << '#' << r->serial;
    }
    out << '"';
    if (r->kind != nullptr) out << ", shape=box, style=dashed";
    out << "];\n";
  }
  for (const auto& r : records_) {
    for (const record::edge& e : r->in) {
      out << "  t" << e.from << " -> t" << r->serial << " [label=\"";
      if (e.object == nullptr) {
        out << "after";
      } else {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%p", e.object);
        out << buf << ' ' << mode_name(e.mode);
      }
      out << "\"];\n";
    }
  }
  out << "}\n";
}

}  // namespace detail

// ---------------------------------------------------------------------------
// flow, flow_task, after

flow::flow(pool& p, flow_options options)
    : core_(std::make_unique<detail::flow_core>(p, options)) {}

flow::~flow() {
  if (!core_) return;
  try {
    core_->drain();
  } catch (...) {
    // Only allocation can fail on the way (a reduction's combine task);
    // the tasks are waited for all the same.
    detail::scheduler::report_error(core_->owner(), std::current_exception());
    core_->drain_without_reductions();
  }
  core_->report_left_errors();
}

detail::flow_core& flow::core() const {
  if (!core_) {
    throw usage_error("weft::flow: the flow was moved from; use the flow it was moved to");
  }
  return *core_;
}

void flow::wait() { core().wait(); }

bool flow::cancel() noexcept { return core_ != nullptr && core_->cancel(); }

void flow::dump(std::ostream& out) const { core().dump(out); }

flow_task flow_task::name(std::string_view name) const {
  if (node_ == nullptr) {
    throw usage_error("weft::flow_task: the handle is empty; use the task flow::emplace returned");
  }
  node_->owner->set_name(node_, generation_, name);
  return *this;
}

after_access after(const flow_task& t) {
  if (t.node_ == nullptr) {
    throw usage_error("weft::after: the flow_task is empty; use the task flow::emplace returned");
  }
  after_access a;
  a.desc.is_after = true;
  a.desc.after_node = t.node_;
  a.desc.after_generation = t.generation_;
  return a;
}

}  // namespace weft
