// weft::mpi::flow (docs/mpi.md): the distributed flow's life, its
// objects, its tasks' hooks and wait(). The transfers between ranks are in
// src/mpi/transfer.cpp.
#include <climits>
#include <exception>
#include <memory>
#include <string>
#include <utility>

#include "engine.hpp"
#include "flow_state.hpp"
#include "weft/mpi.hpp"

namespace weft::mpi {
namespace detail {

bool task_skipped(flow_state* s) noexcept { return s->skipped(); }

void task_failed(flow_state* s, std::exception_ptr e) noexcept { s->fail_local(std::move(e)); }
void task_done(flow_state* s) noexcept { s->done(); }

}  // namespace detail

// ---------------------------------------------------------------------------
// flow

flow::flow(pool& p, MPI_Comm comm, flow_options options) : local_(p, options.local) {
  detail::check_mpi_ready("weft::mpi::flow");
  detail::check_pool(p, "weft::mpi::flow");
  state_ = std::make_unique<detail::flow_state>(p, comm, options);
}

flow::~flow() {
  detail::flow_state* s = state();
  if (!s->dead() && s->emplaced_since_wait) {
    try {
      wait();
    } catch (...) {
      detail::continuation_access::report_error(local_.owner(), std::current_exception());
    }
  }
  // What a dead flow left drains: its requests are given up first, so the
  // tasks after them can finish.
  s->eng().give_up("weft::mpi::flow: the flow was destroyed", true);
  try {
    local_.wait();
  } catch (...) {  // NOLINT(bugprone-empty-catch): already reported by wait() above
  }
  state_.reset();
}

int flow::rank() const noexcept { return state()->rank(); }
int flow::size() const noexcept { return state()->size(); }

void flow::add_object(const void* x, int owner, void* data, std::size_t size) {
  if (data == nullptr) {
    throw usage_error(
        "weft::mpi::flow::register_data: an object's data must be at a non-null address; "
        "register a view (register_data(x, owner, size, view)) for data allocated later");
  }
  add_record(x, owner, data, size, nullptr);
}

void flow::add_lazy_object(const void* x, int owner, std::size_t size,
                           std::function<std::span<std::byte>()> view,
                           std::function<void()> release) {
  auto lazy = std::make_unique<detail::lazy_data>();
  lazy->view = std::move(view);
  lazy->release = std::move(release);
  add_record(x, owner, nullptr, size, std::move(lazy));
}

void flow::add_record(const void* x, int owner, void* data, std::size_t size,
                      std::unique_ptr<detail::lazy_data> lazy) {
  detail::flow_state* s = state();
  if (s->dead()) throw usage_error(aborted_text);
  if (owner < 0 || owner >= s->size()) {
    throw usage_error("weft::mpi::flow::register_data: owner " + std::to_string(owner) +
                      " is not a rank of the flow's communicator (0 to " +
                      std::to_string(s->size() - 1) + ")");
  }
  if (s->index.count(x) != 0) {
    throw usage_error(
        "weft::mpi::flow::register_data: the object is registered already; register each object "
        "once");
  }
  if (size == 0 || size > static_cast<std::size_t>(INT_MAX)) {
    throw usage_error(
        "weft::mpi::flow::register_data: an object's data must be 1 to INT_MAX bytes; split "
        "larger objects");
  }
  if (s->objects.size() + 1 > static_cast<std::size_t>(s->tag_ub())) {
    throw usage_error("weft::mpi::flow::register_data: more objects than MPI tags (" +
                      std::to_string(s->tag_ub()) + "); use fewer, larger objects");
  }
  detail::object_record r{
      x,
      data,
      size,
      owner,
      static_cast<int>(s->objects.size()) + 1,
      0,
      std::vector<std::uint64_t>(static_cast<std::size_t>(s->size()), ~std::uint64_t{0}),
      std::move(lazy)};
  r.have[static_cast<std::size_t>(owner)] = 0;
  s->index.emplace(x, s->objects.size());
  s->objects.push_back(std::move(r));
  s->hash =
      detail::mix(detail::mix(detail::mix(s->hash, 3), static_cast<std::uint64_t>(owner)), size);
  s->emplaced_since_wait = true;
}

int flow::owner_of(const void* x) const {
  const detail::flow_state* s = state();
  const auto it = s->index.find(x);
  if (it == s->index.end()) {
    throw usage_error(
        "weft::mpi::flow: an object the program uses is not registered; call register_data(x, "
        "owner) for it on every rank first");
  }
  return s->objects[it->second].owner;
}

void flow::wait() {
  detail::flow_state* s = state();
  if (s->dead()) throw usage_error(aborted_text);
  s->wait_local();
  try {
    local_.wait();
  } catch (...) {
    // Not a task's exception (the wrappers keep those): the local flow
    // itself failed. The other ranks must hear of it.
    s->fail_local(std::current_exception());
  }
  const std::exception_ptr e = s->agree(s->hash);
  s->hash = detail::hash_start;
  s->emplaced_since_wait = false;
  if (e) std::rethrow_exception(e);
}

flow_stats flow::statistics() const {
  flow_stats st = state()->stats;
  st.polling = state()->eng().statistics();
  return st;
}

}  // namespace weft::mpi
