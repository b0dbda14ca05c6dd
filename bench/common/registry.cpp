#include "common/registry.hpp"

#include <vector>

namespace bench {
namespace {

struct pending {
  suite which;
  void (*add)();
};

// A function-local static, so that files may queue registrations from their
// own static initializers in any order.
std::vector<pending>& queue() {
  static std::vector<pending> q;
  return q;
}

}  // namespace

int on_startup(suite which, void (*add)()) {
  queue().push_back({which, add});
  return 0;
}

void register_suite(suite which) {
  for (const pending& p : queue()) {
    if (p.which == which) p.add();
  }
}

}  // namespace bench
