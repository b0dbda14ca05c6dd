// A traced pool's rings and the Chrome trace event JSON written from them
// (docs/tracing.md).
#include "weft/detail/trace.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <ostream>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace weft::detail {

namespace {

std::uint64_t next_tracer_serial() noexcept {
  static std::atomic<std::uint64_t> serial{0};
  // Relaxed: only uniqueness matters.
  return serial.fetch_add(1, std::memory_order_relaxed) + 1;
}

// The ring this thread used last, by the serial of its tracer (a new tracer
// at a freed one's address has a new serial, so a stale entry never
// matches).
struct cached_ring {
  std::uint64_t serial = 0;
  trace_ring* ring = nullptr;
};
constinit thread_local cached_ring last_ring{};

void write_string(std::ostream& out, std::string_view s) {
  out << '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out << '\\' << ch;
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out << escaped;
    } else {
      out << ch;
    }
  }
  out << '"';
}

// Microseconds, as Chrome trace events count time, with the nanoseconds kept.
void write_us(std::ostream& out, std::uint64_t ns) {
  char text[32];
  std::snprintf(text, sizeof(text), "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  out << text;
}

std::string_view record_name(const trace_record_words& r) {
  const auto* bytes = reinterpret_cast<const char*>(r.name);
  std::size_t n = 0;
  while (n < sizeof(r.name) && bytes[n] != '\0') ++n;
  return {bytes, n};
}

struct placed {
  trace_record_words r;
  std::size_t tid;
};

}  // namespace

void set_trace_name(trace_record_words& r, std::string_view name) noexcept {
  char bytes[sizeof(r.name)] = {};
  std::size_t n = std::min(name.size(), sizeof(bytes) - 1);
  // Cut at a character boundary: the file must stay valid UTF-8.
  if (n < name.size()) {
    while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xC0U) == 0x80U) --n;
  }
  std::copy_n(name.data(), n, bytes);
  std::memcpy(r.name, bytes, sizeof(bytes));
}

std::string trace_path(const std::string& configured) {
  if (!configured.empty()) return configured;
  // Racy only against a concurrent setenv(), which no C++ program may do
  // while other threads read the environment anyway.
  const char* env = std::getenv("WEFT_TRACE");  // NOLINT(concurrency-mt-unsafe)
  if (env == nullptr || *env == '\0') return {};
  static std::atomic<unsigned> pools{0};
  // Relaxed: only uniqueness matters.
  const unsigned k = pools.fetch_add(1, std::memory_order_relaxed);
  std::string path = env;
  if (k == 0) return path;
  const std::size_t slash = path.rfind('/');
  const std::size_t dot = path.rfind('.');
  std::string suffix = ".";
  suffix += std::to_string(k);
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + suffix;
  return path.substr(0, dot) + suffix + path.substr(dot);
}

tracer::tracer(std::size_t workers, std::size_t capacity, std::string path)
    : serial_(next_tracer_serial()), capacity_(std::bit_ceil(capacity)), path_(std::move(path)) {
  job_record_.kind = static_cast<std::uint64_t>(trace_kind::slice);
  set_trace_name(job_record_, "job");
  workers_.reserve(workers);
  for (std::size_t i = 0; i < workers; ++i) {
    workers_.push_back(std::make_unique<trace_ring>(capacity_, "worker " + std::to_string(i)));
  }
}

trace_ring& tracer::other_ring() {
  if (last_ring.serial == serial_) return *last_ring.ring;
  std::lock_guard lock{others_mutex_};
  const std::thread::id me = std::this_thread::get_id();
  auto it =
      std::find_if(others_.begin(), others_.end(), [me](const auto& o) { return o.first == me; });
  if (it == others_.end()) {
    std::string track = "thread " + std::to_string(others_.size() + 1) + " (not a worker)";
    others_.emplace_back(me, std::make_unique<trace_ring>(capacity_, std::move(track)));
    it = std::prev(others_.end());
  }
  last_ring = {serial_, it->second.get()};
  return *it->second;
}

void tracer::write(std::ostream& out, const std::string& pool_name) const {
  std::vector<const trace_ring*> rings;
  {
    std::lock_guard lock{others_mutex_};
    rings.reserve(workers_.size() + others_.size());
    for (const auto& w : workers_) rings.push_back(w.get());
    for (const auto& o : others_) rings.push_back(o.second.get());
  }
  std::vector<placed> records;
  std::uint64_t dropped = 0;
  for (std::size_t t = 0; t < rings.size(); ++t) {
    std::uint64_t lost = 0;
    for (const auto& r : rings[t]->copy(lost)) records.push_back({r, t + 1});
    dropped += lost;
  }
  // By time; at equal times an edge before the task it releases, an outer
  // slice before the slices inside it.
  std::stable_sort(records.begin(), records.end(), [](const placed& a, const placed& b) {
    if (a.r.start != b.r.start) return a.r.start < b.r.start;
    const bool a_edge = a.r.kind == static_cast<std::uint64_t>(trace_kind::release);
    const bool b_edge = b.r.kind == static_cast<std::uint64_t>(trace_kind::release);
    if (a_edge != b_edge) return a_edge;
    return a.r.end > b.r.end;
  });

  // Ticks to nanoseconds since the origin, at the rate measured between the
  // origin and now.
  const double elapsed_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - origin_).count();
  const std::uint64_t elapsed_ticks = now() - origin_ticks_;
  const double ns_per_tick =
      elapsed_ticks > 0 && elapsed_ns > 0 ? elapsed_ns / static_cast<double>(elapsed_ticks) : 1.0;
  auto to_ns = [&](std::uint64_t t) {
    return t <= origin_ticks_
               ? std::uint64_t{0}
               : static_cast<std::uint64_t>(static_cast<double>(t - origin_ticks_) * ns_per_tick);
  };
  for (placed& p : records) {
    p.r.start = to_ns(p.r.start);
    p.r.end = to_ns(p.r.end);
  }

  out << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"pool\":";
  write_string(out, pool_name);
  out << ",\"threads\":" << rings.size() << ",\"records_per_thread\":" << capacity_
      << ",\"dropped_records\":" << dropped << "},\n\"traceEvents\":[\n";
  out << "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":";
  write_string(out, "weft pool " + pool_name);
  out << "}}";
  for (std::size_t t = 0; t < rings.size(); ++t) {
    out << ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":" << t + 1
        << ",\"name\":\"thread_name\",\"args\":{\"name\":";
    write_string(out, rings[t]->track());
    out << "}},\n{\"ph\":\"M\",\"pid\":1,\"tid\":" << t + 1
        << ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" << t + 1 << "}}";
  }
  // An edge becomes an arrow from the release to the start of the task it
  // released; the arrows get ids of their own, since a task's id (its
  // address) recurs in every run of its graph.
  std::map<std::uint64_t, placed> releases;
  std::uint64_t arrows = 0;
  for (const placed& p : records) {
    const trace_record_words& r = p.r;
    switch (static_cast<trace_kind>(r.kind)) {
      case trace_kind::release:
        releases[r.arg] = p;
        break;
      case trace_kind::slice:
      case trace_kind::parked: {
        const bool parked = r.kind == static_cast<std::uint64_t>(trace_kind::parked);
        out << ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":" << p.tid << ",\"cat\":\""
            << (parked ? "sleep" : "job") << "\",\"name\":";
        write_string(out, record_name(r));
        out << ",\"ts\":";
        write_us(out, r.start);
        out << ",\"dur\":";
        write_us(out, r.end - r.start);
        out << '}';
        if (parked || r.arg == 0) break;
        const auto it = releases.find(r.arg);
        if (it == releases.end()) break;
        ++arrows;
        out << ",\n{\"ph\":\"s\",\"pid\":1,\"tid\":" << it->second.tid
            << ",\"cat\":\"edge\",\"name\":\"release\",\"id\":" << arrows << ",\"ts\":";
        write_us(out, it->second.r.start);
        out << "},\n{\"ph\":\"f\",\"bp\":\"e\",\"pid\":1,\"tid\":" << p.tid
            << ",\"cat\":\"edge\",\"name\":\"release\",\"id\":" << arrows << ",\"ts\":";
        write_us(out, r.start);
        out << '}';
        releases.erase(it);
        break;
      }
      case trace_kind::steal:
        out << ",\n{\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":" << p.tid
            << ",\"cat\":\"steal\",\"name\":\"steal\",\"ts\":";
        write_us(out, r.start);
        out << ",\"args\":{\"from\":\"worker " << r.arg << "\"}}";
        break;
    }
  }
  out << "\n]}\n";
}

void tracer::write_file(const std::string& path, const std::string& pool_name) const {
  std::ofstream out{path, std::ios::trunc};
  if (!out) {
    throw std::system_error(errno, std::generic_category(),
                            "weft: cannot open '" + path + "' to write the pool's trace");
  }
  write(out, pool_name);
  out.flush();
  if (!out) {
    throw std::system_error(errno, std::generic_category(),
                            "weft: cannot write the pool's trace to '" + path + "'");
  }
}

}  // namespace weft::detail
