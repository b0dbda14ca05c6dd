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

long whole_number_from_environment(const char* name, long fallback, long largest) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);
  if (*end != '\0' || n < 1 || n > largest) {
    std::fprintf(stderr, "%s must be a whole number from 1 to %ld, not '%s'\n", name, largest,
                 text);
    std::exit(2);
  }
  return n;
}

std::uint16_t workers_from_environment() {
  return static_cast<std::uint16_t>(
      whole_number_from_environment("WEFT_BENCH_WORKERS", 2, max_workers));
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
