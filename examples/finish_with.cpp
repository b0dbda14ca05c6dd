// A job that finishes with others: LibZ.Jobs' finishWith. One job updates a
// large buffer by attaching a job per section to itself; its future is
// ready only once every section is written, and no thread waits for the
// sections meanwhile (the last job to finish completes the future).
#include <cstddef>
#include <cstdio>
#include <span>
#include <vector>
#include <weft/weft.hpp>

int main() {
  weft::pool pool{{.threads = 4, .name = "buffer"}};
  std::vector<unsigned char> buffer(256);
  constexpr std::size_t sections = 4;
  const std::size_t size = buffer.size() / sections;
  auto fill = [](std::span<unsigned char> part, unsigned char value) {
    for (unsigned char& b : part) b = value;
  };

  weft::future<std::size_t> updated = weft::submit_scoped(pool, [&](weft::scope& scope) {
    // Sections 1..3 as attachments: they may run while this job goes on.
    for (std::size_t i = 1; i < sections; ++i) {
      scope.spawn([&, i] {
        fill(std::span{buffer}.subspan(i * size, size), static_cast<unsigned char>(i));
      });
    }
    // The job itself updates the first section.
    fill(std::span{buffer}.first(size), 0);
    return sections;
  });

  // Waiting for the one job waits for the whole buffer.
  const std::size_t n = updated.get();
  bool ok = n == sections;
  for (std::size_t i = 0; i < buffer.size(); ++i) ok = ok && buffer[i] == i / size;
  std::printf("%zu sections written: %s\n", n, ok ? "the whole buffer is updated" : "WRONG");
  return ok ? 0 : 1;
}
