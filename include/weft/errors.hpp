// The exceptions weft throws for misuse; each message says what to do instead.
#pragma once

#include <stdexcept>

namespace weft {

/// Thrown by spawn/submit (and everything built on them) when the pool's
/// destruction has begun and the caller is not one of the pool's own jobs.
class pool_closed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A call that can never succeed where it is made: waiting for a pool from one
/// of its own jobs, get() on an empty future, and the like.
class usage_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace weft
