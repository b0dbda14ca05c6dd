// weft::mpi::flow's transfers: which rank needs which version of an object
// and which rank runs the task (plan(), task_started()), the send and
// receive tasks that move it, gathering and dropping copies.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "flow_state.hpp"
#include "weft/mpi.hpp"

namespace weft::mpi {
namespace detail {

// A transfer task's data address: a lazy object's view is asked on this
// rank's first transfer of it. False if the view failed: the flow is then
// aborted on every rank, as after a task's exception.
bool resolve_data(flow_state* s, lazy_data* lazy, std::size_t bytes, void*& data) noexcept {
  if (lazy == nullptr) return true;
  try {
    data = lazy->resolve(bytes);
    return true;
  } catch (...) {
    s->fail_local(std::current_exception());
    return false;
  }
}

}  // namespace detail

namespace {

// The local flow sees objects by address only: transfer tasks declare the
// object's address under this type and never look at it.
struct opaque {};

opaque& as_opaque(void* x) noexcept { return *static_cast<opaque*>(x); }

std::size_t index_of(const detail::flow_state& s, const void* x) {
  const auto it = s.index.find(x);
  if (it == s.index.end()) {
    throw usage_error(
        "weft::mpi::flow: an object the program uses is not registered; call register_data(x, "
        "owner) for it on every rank first");
  }
  return it->second;
}

}  // namespace

// Every rank: rank `to` gets object i's current version. The owner emplaces
// a send (after the version's writer) and a task that holds a read of the
// object until the send completes, so that the next writer waits for it;
// `to` emplaces a receive into its instance (after its readers of the old
// version) and a task that holds a write until the data arrived, so that
// the readers of the new version wait for it.
void flow::transfer(std::size_t i, int to) {
  detail::flow_state* s = state();
  detail::object_record& o = s->objects[i];
  o.have[static_cast<std::size_t>(to)] = o.version;
  const int me = s->rank();
  if (me != o.owner && me != to) return;
  if (me == o.owner) {
    ++s->stats.messages_sent;
    s->stats.bytes_sent += o.bytes;
  } else {
    ++s->stats.messages_received;
    s->stats.bytes_received += o.bytes;
  }
  if (s->skipped()) return;
  detail::engine& eng = s->eng();
  detail::engine::promise p = eng.make_promise(s);
  // const_cast: the transfer tasks never touch the object itself; the
  // local flow only compares its address.
  opaque& x = as_opaque(const_cast<void*>(o.object));
  void* const data = o.data;
  detail::lazy_data* const lazy = o.lazy.get();
  const int count = static_cast<int>(o.bytes);
  const int tag = o.tag;
  MPI_Comm comm = s->comm();
  if (me == o.owner) {
    task_started();
    local_.emplace(
        [s, e = p.e, data, lazy, count, to, tag, comm](const opaque&) {
          const detail::task_guard guard{s};
          if (s->skipped()) return;
          void* from = data;
          if (!detail::resolve_data(s, lazy, static_cast<std::size_t>(count), from)) return;
          s->eng().arm(e, [&](MPI_Request* r) {
            return MPI_Isend(from, count, MPI_BYTE, to, tag, comm, r);
          });
        },
        weft::read(std::as_const(x)));
    task_started();
    local_.emplace([s](const opaque&) { s->done(); }, weft::read(std::as_const(x)),
                   weft::after(p.f));
  } else {
    p.e->expect_bytes = o.bytes;
    const int from = o.owner;
    auto receive = [s, e = p.e, data, lazy, count, from, tag, comm](opaque&) {
      const detail::task_guard guard{s};
      if (s->skipped()) return;
      void* into = data;
      if (!detail::resolve_data(s, lazy, static_cast<std::size_t>(count), into)) return;
      s->eng().arm(
          e, [&](MPI_Request* r) { return MPI_Irecv(into, count, MPI_BYTE, from, tag, comm, r); });
    };
    if (lazy != nullptr) {
      // A lazy copy is allocated only once its data are there to receive,
      // not when the receive could be posted (often long before the owner
      // has computed them): a task probes for the message unless this
      // rank's copy is allocated already, and the receive waits for the
      // probe.
      detail::engine::promise probe = eng.make_promise(s);
      task_started();
      local_.emplace(
          [s, e = probe.e, lazy, from, tag, comm](opaque&) {
            const detail::task_guard guard{s};
            if (s->skipped()) return;
            if (lazy->held()) {
              s->eng().settle(e);
            } else {
              s->eng().arm_probe(e, from, tag, comm);
            }
          },
          weft::write(x));
      task_started();
      local_.emplace(std::move(receive), weft::write(x), weft::after(probe.f));
    } else {
      task_started();
      local_.emplace(std::move(receive), weft::write(x));
    }
    task_started();
    local_.emplace([s](opaque&) { s->done(); }, weft::write(x), weft::after(p.f));
  }
}

bool flow::plan(const access_ref* accesses, std::size_t count) {
  detail::flow_state* s = state();
  if (s->dead()) throw usage_error(aborted_text);
  constexpr std::size_t most = 16;
  if (count > most) {
    throw usage_error("weft::mpi::flow::emplace: at most 16 accesses per task");
  }
  std::size_t idx[most];
  int exec = -1;
  for (std::size_t k = 0; k < count; ++k) {
    idx[k] = index_of(*s, accesses[k].object);
    if (!accesses[k].writes()) continue;
    const int owner = s->objects[idx[k]].owner;
    if (exec < 0) {
      exec = owner;
    } else if (owner != exec) {
      throw usage_error(
          "weft::mpi::flow::emplace: the task writes objects owned by ranks " +
          std::to_string(exec) + " and " + std::to_string(owner) +
          "; a task runs on the owner of what it writes, so split it into one task per owner");
    }
  }
  if (exec < 0) exec = s->objects[idx[0]].owner;
  std::uint64_t h = detail::mix(detail::mix(s->hash, 1), static_cast<std::uint64_t>(exec));
  for (std::size_t k = 0; k < count; ++k)
    h = detail::mix(h, idx[k] * 8 + static_cast<std::uint64_t>(accesses[k].mode));
  s->hash = h;
  s->emplaced_since_wait = true;
  for (std::size_t k = 0; k < count; ++k) {
    detail::object_record& o = s->objects[idx[k]];
    if (!accesses[k].writes() && o.owner != exec &&
        o.have[static_cast<std::size_t>(exec)] != o.version) {
      transfer(idx[k], exec);
    }
  }
  for (std::size_t k = 0; k < count; ++k) {
    if (!accesses[k].writes()) continue;
    detail::object_record& o = s->objects[idx[k]];
    // Once per object, even if declared twice.
    if (o.have[static_cast<std::size_t>(o.owner)] == o.version + 1) continue;
    ++o.version;
    o.have[static_cast<std::size_t>(o.owner)] = o.version;
  }
  return exec == s->rank() && !s->skipped();
}

void flow::task_started() {
  detail::flow_state* s = state();
  s->started();
  ++s->stats.local_tasks;
}

void flow::gather_object(const void* x, int root) {
  detail::flow_state* s = state();
  if (s->dead()) throw usage_error(aborted_text);
  if (root < 0 || root >= s->size()) {
    throw usage_error("weft::mpi::flow::gather: root " + std::to_string(root) +
                      " is not a rank of the flow's communicator");
  }
  const std::size_t i = index_of(*s, x);
  s->hash = detail::mix(detail::mix(detail::mix(s->hash, 2), static_cast<std::uint64_t>(root)), i);
  s->emplaced_since_wait = true;
  const detail::object_record& o = s->objects[i];
  if (o.owner != root && o.have[static_cast<std::size_t>(root)] != o.version) transfer(i, root);
}

// Every rank forgets that the non-owners hold x's current version, so the
// next read there is a transfer again; a rank that holds a copy with a
// release frees it in a task that writes x, which the local flow orders
// after the copy's readers and before the next receive.
void flow::drop_object(const void* x) {
  detail::flow_state* s = state();
  if (s->dead()) throw usage_error(aborted_text);
  const std::size_t i = index_of(*s, x);
  s->hash = detail::mix(detail::mix(s->hash, 4), i);
  s->emplaced_since_wait = true;
  detail::object_record& o = s->objects[i];
  const auto me = static_cast<std::size_t>(s->rank());
  const bool held_here = static_cast<int>(me) != o.owner && o.have[me] != ~std::uint64_t{0};
  for (std::size_t r = 0; r < o.have.size(); ++r) {
    if (static_cast<int>(r) != o.owner) o.have[r] = ~std::uint64_t{0};
  }
  if (!held_here || !o.lazy || !o.lazy->release || s->skipped()) return;
  detail::lazy_data* const lazy = o.lazy.get();
  task_started();
  local_.emplace(
      [s, lazy](opaque&) {
        const detail::task_guard guard{s};
        if (s->skipped()) return;
        try {
          lazy->drop();
        } catch (...) {
          s->fail_local(std::current_exception());
        }
      },
      weft::write(as_opaque(const_cast<void*>(o.object))));
}

}  // namespace weft::mpi
