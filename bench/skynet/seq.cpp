// Skynet: the sequential baseline, plain recursion on the calling thread.
#include <cstdint>

#include "skynet/skynet.hpp"

namespace {

struct call_each {
  template <class Child>
  std::int64_t operator()(int count, const Child& child) const {
    std::int64_t sum = 0;
    for (int i = 0; i < count; ++i) sum += child(i);
    return sum;
  }
};

auto setup() {
  return [](int levels) { return bench::skynet::node(0, levels, call_each{}); };
}

const int timing =
    bench::on_startup(bench::suite::timing, [] { bench::skynet::add_timing("recursion", setup); });

}  // namespace
