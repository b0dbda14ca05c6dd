// The first door (from any thread) between the pool and the front ends
// built on it: detail::scheduler, defined in scheduler_door.hpp, which weft/pool.hpp
// includes right after class pool (so that the front ends pool.hpp exports
// find it, whichever header a program includes first).
#pragma once

#include "../pool.hpp"  // IWYU pragma: export
