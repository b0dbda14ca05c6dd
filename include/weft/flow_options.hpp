// weft::flow's options and access modes (weft/flow.hpp): what a flow is
// made with and how a task may use an object.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft {

/// Options of a flow, given to its constructor.
struct flow_options {
  /// Unfinished tasks the flow keeps at most; past it, emplace runs tasks (on
  /// a worker) or waits (elsewhere) until half of them have finished, so
  /// memory stays flat however many tasks are emplaced.
  std::size_t window = 4096;
  /// Keep the tasks and edges since the last wait() for dump(). Off by
  /// default: it costs a few stores and some memory per task.
  bool keep_graph = false;
};

/// How a task uses an object (docs/flow.md has the edges each mode creates).
enum class access_mode : std::uint8_t { read, write, commute, concurrent, reduce };

}  // namespace weft
