#include "common/registry.hpp"

#include <cstdio>
#include <cstdlib>
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

std::uint16_t workers_from_environment() {
  const char* text = std::getenv("WEFT_BENCH_WORKERS");
  if (text == nullptr || *text == '\0') return 2;
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);
  if (*end != '\0' || n < 1 || n > max_workers) {
    std::fprintf(stderr, "WEFT_BENCH_WORKERS must be a whole number from 1 to %d, not '%s'\n",
                 max_workers, text);
    std::exit(2);
  }
  return static_cast<std::uint16_t>(n);
}

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
