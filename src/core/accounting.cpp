#include "weft/detail/core/accounting.hpp"

namespace weft::detail {

heap_job* accounting::allocate_job(job_cache& from) {
  if (!is_shared(from)) return from.allocate();  // the caller owns it
  std::lock_guard lock{shared_mutex_};
  return shared_.allocate();
}

}  // namespace weft::detail
