// Which worker is running the calling code.
#pragma once

#include <cstddef>
#include <optional>

#include "detail/context.hpp"

namespace weft::this_worker {

// The calling thread's index in its pool (0 .. size()-1); 0 while a
// sequential pool runs a job on the waiting thread; empty on any other
// thread.
inline std::optional<std::size_t> index() noexcept {
  const detail::context& ctx = detail::tls;
  if (ctx.self != nullptr) return ctx.self->index;
  if (ctx.owner != nullptr) return 0;
  return std::nullopt;
}

}  // namespace weft::this_worker
