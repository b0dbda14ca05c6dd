// Queued runs (Taskflow's executor.run on a running taskflow): a frame
// pipeline graph is run once per frame by two producer threads that do not
// coordinate. Runs of one graph never overlap, so the graph's tasks share
// plain state between runs; each call gets its own future, and a sequence
// (run_n) queues behind them like any run.
#include <cstddef>
#include <cstdio>
#include <thread>
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 2}};
  weft::graph frame;
  long frames = 0;  // plain: touched by one run at a time
  long pixels = 0;
  constexpr long frame_pixels = 640L * 480;
  auto decode = frame.emplace([&] { ++frames; }).name("decode");
  auto filter = frame.emplace([&] { pixels += frame_pixels; }).name("filter");
  auto show = frame.emplace([] {}).name("show");
  decode.precede(filter);
  filter.precede(show);

  auto produce = [&](int n) {
    std::vector<weft::future<void>> runs;
    runs.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) runs.push_back(pool.run(frame));  // queued while one runs
    for (auto& r : runs) r.get();
  };
  std::thread a{produce, 500};
  std::thread b{produce, 500};
  a.join();
  b.join();
  pool.run_n(frame, 24).get();  // one more second of video, behind anything queued

  std::printf("%ld frames, %ld pixels\n", frames, pixels);
  const bool ok = frames == 1024 && pixels == 1024 * frame_pixels;
  std::printf("%s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
