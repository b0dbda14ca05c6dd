// Wide fan: one source task, 100,000 independent tasks after it, one sink
// after all of them; built and run once per iteration. Each middle task
// marks its own slot; the sink counts the marks, which must be 100,000.
//
// Name: "wide_fan/100000/<variant>" (real time per build + run).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/check.hpp"
#include "common/registry.hpp"

namespace bench::wide_fan {

inline constexpr std::int64_t width = 100'000;

// What the middle and last tasks do, the same for every competitor.
struct marks {
  std::vector<unsigned char> slot = std::vector<unsigned char>(static_cast<std::size_t>(width), 0);
  std::int64_t counted = 0;

  void mark(std::int64_t i) noexcept { slot[static_cast<std::size_t>(i)] = 1; }
  void count() noexcept {
    counted = 0;
    for (unsigned char& s : slot) {
      counted += s;
      s = 0;
    }
  }
};

// `setup()` returns a callable `void(marks&)` that builds the fan and runs it.
template <class Setup>
void add(std::string_view variant, Setup setup) {
  bench::add("wide_fan", std::to_string(width), variant,
             [setup](benchmark::State& state) {
               auto run = setup();
               marks m;
               for (auto _ : state) {
                 run(m);
                 if (!check_equal(state, m.counted, width, "middle tasks counted by the sink")) {
                   break;
                 }
               }
             })
      ->Unit(benchmark::kMillisecond)
      ->MinTime(bench::min_time)
      ->MinWarmUpTime(bench::warm_up)
      ->UseRealTime();
}

}  // namespace bench::wide_fan
