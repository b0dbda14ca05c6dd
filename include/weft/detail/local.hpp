// The second door (on a worker of the pool) between the pool and the front ends
// built on it: detail::local, defined in local_door.hpp, which weft/pool.hpp
// includes right after class pool (so that the front ends pool.hpp exports
// find it, whichever header a program includes first).
#pragma once

#include "../pool.hpp"  // IWYU pragma: export
