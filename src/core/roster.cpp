#include "weft/detail/core/roster.hpp"

namespace weft::detail {

void roster::make_slots(std::size_t slots, std::size_t batch) {
  slots_.reserve(slots);
  for (std::size_t i = 0; i < slots; ++i) {
    slots_.push_back(std::make_unique<worker>(i));
    // Taking jobs in batches must not allocate (pool::search::keep_batch()).
    slots_.back()->batch.reserve(batch);
  }
}

}  // namespace weft::detail
