// weft_bench_report: reads the JSON that the weft_bench_<competitor>
// executables write (--benchmark_out=<file> --benchmark_out_format=json) and
// prints one table that compares weft with every other competitor.
//
//   weft_bench_report <file.json>...
//
// Benchmarks are named "<workload>/<size>/<variant>" (see
// bench/common/registry.hpp); rows are keyed by "<workload>/<size>", one row
// per weft variant. Each cell is the median over the repetitions of the
// benchmark's metric: the counter median_ns, ns_per_task, cpu_ms or
// peak_rss_mib when the benchmark reports one, otherwise the real time. A
// few counters also get a row of their own below their benchmark's
// (`extra_rows`: flow_overhead's CPU per task, flow_latency's idle CPU). A
// peer with several variants of the same row is shown with its best
// (lowest) one, named in brackets, except the variants in `own_columns`,
// which are shown as a peer of their own (the sequential executable's
// LAPACKE Cholesky as "lapacke"). Ratios are weft's median over the peer's
// median: below 1 means weft used less time, CPU or memory.
//
// Exit status: 0 when every result passed verification, 1 when any run
// reported an error (a failed check, see bench/common/check.hpp), 2 on a
// usage, I/O or parse error. A missed performance target does not fail.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "json.hpp"

namespace {

using bench::json::value;

enum class metric { real_time, round_trip_ns, per_task_ns, cpu_ms, rss_mib, cpu_ns, cpu_ms_per_s };

// The counters that replace real time as a benchmark's metric, in priority order.
struct counter_metric {
  std::string_view name;
  metric kind;
};
constexpr counter_metric counter_metrics[] = {
    {"median_ns", metric::round_trip_ns},
    {"ns_per_task", metric::per_task_ns},
    {"cpu_ms", metric::cpu_ms},
    {"peak_rss_mib", metric::rss_mib},
};

// Counters shown in a row of their own, "<workload>/<size> (<label>)", right
// below their benchmark's row.
struct extra_row {
  std::string_view counter;
  std::string_view label;
  metric kind;
};
constexpr extra_row extra_rows[] = {
    {"cpu_ns_per_task", "cpu/task", metric::cpu_ns},
    {"idle_cpu_ms_per_s", "idle cpu", metric::cpu_ms_per_s},
};

// Variants of a competitor that are a peer of their own rather than a way
// of doing the same thing: a column named `column` instead of taking part
// in the competitor's best.
struct own_column {
  std::string_view competitor;
  std::string_view variant;
  std::string_view column;
};
constexpr own_column own_columns[] = {
    {"seq", "lapacke", "lapacke"},  // cholesky: LAPACKE_dpotrf, OpenBLAS on 2 threads
};

// The performance targets for weft on this kind of machine.
struct target {
  std::string_view row;      // "<workload>/<size>"
  std::string_view variant;  // weft's variant
  std::string_view peer;     // empty: `limit` is an absolute value of the metric
  double limit;              // ratio to the peer, or the metric's own unit
  std::string_view text;
};
constexpr target targets[] = {
    {"fib/30", "join", "tbb", 0.4, "<= 0.4x tbb"},
    {"empty_jobs/1000000", "spawn", "omp", 0.8, "<= 0.8x omp"},
    {"round_trip/2048", "submit_get", "", 500.0, "<= 500 ns"},
    {"idle/1s", "pool", "", 1.0, "<= 1 ms cpu"},
    {"idle/200ms_job", "pool", "", 2.0, "<= 2 ms cpu"},
    {"linear_chain/1048576", "graph", "tbb", 0.25, "<= 0.25x tbb"},
    {"linear_chain/4194304", "graph", "tbb", 0.25, "<= 0.25x tbb"},
    {"wide_fan/100000", "graph", "tbb", 0.4, "<= 0.4x tbb"},
    {"matmul/512", "graph", "omp", 1.03, "<= 1.03x omp"},
    {"matmul/1024", "graph", "omp", 1.03, "<= 1.03x omp"},
};

// Where a result belongs in the table: weft's rows first, then in the order
// of the files on the command line and of registration inside each file
// (family_index), so that the table does not follow the random order in
// which the repetitions ran; an extra row follows its benchmark's row.
using position = std::tuple<int, std::size_t, double, int>;
constexpr position unplaced{std::numeric_limits<int>::max(), 0, 0.0, 0};

struct row_data {
  metric kind = metric::real_time;
  position first = unplaced;
  // competitor -> variant -> one value per repetition, in the metric's unit
  // (nanoseconds for real time).
  std::map<std::string, std::map<std::string, std::vector<double>>> samples;
  // competitor -> variants with at least one run that failed verification.
  std::map<std::string, std::vector<std::string>> failed;
  std::map<std::string, position> weft_variants;
};

struct results {
  std::vector<std::string> row_order;  // sorted by row_data::first when printing
  std::map<std::string, row_data> rows;
  std::vector<std::string> competitors;  // in the order first seen
  std::vector<std::string> failures;
};

double to_ns(double t, std::string_view unit) {
  if (unit == "us") return t * 1e3;
  if (unit == "ms") return t * 1e6;
  if (unit == "s") return t * 1e9;
  return t;  // "ns"
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = s.find(sep, start);
    parts.emplace_back(s.substr(start, end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

std::string file_stem(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return name.substr(0, name.find('.'));
}

void add_unique(std::vector<std::string>& list, const std::string& item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

void place(results& out, const std::string& key, const std::string& competitor,
           const std::string& variant, position pos) {
  add_unique(out.row_order, key);
  row_data& row = out.rows[key];
  row.first = std::min(row.first, pos);
  if (competitor == "weft") {
    const auto [it, inserted] = row.weft_variants.try_emplace(variant, pos);
    if (!inserted) it->second = std::min(it->second, pos);
  }
}

void read_file(const std::string& path, std::size_t file_index, results& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  value doc;
  try {
    doc = bench::json::parse(text.str());
  } catch (const bench::json::parse_error& e) {
    throw std::runtime_error(path + ": " + e.what() +
                             " (an executable that crashed leaves a truncated file)");
  }

  std::string competitor = file_stem(path);
  if (const value* context = doc.find("context")) {
    if (const value* c = context->find("competitor")) competitor = c->string_or(competitor);
  }
  add_unique(out.competitors, competitor);

  const value* benchmarks = doc.find("benchmarks");
  if (benchmarks == nullptr) throw std::runtime_error(path + ": no \"benchmarks\" array");
  for (const value& run : benchmarks->items()) {
    const std::string name = run.find("name") ? run.find("name")->string_or("?") : "?";
    const value* run_type = run.find("run_type");
    if (run_type != nullptr && run_type->string_or("") != "iteration") continue;  // aggregates
    const value* run_name = run.find("run_name");
    const std::vector<std::string> parts = split(run_name ? run_name->string_or(name) : name, '/');
    const bool keyed = parts.size() >= 3;  // named <workload>/<size>/<variant>
    const std::string key = keyed ? parts[0] + "/" + parts[1] : "";
    const std::string variant = keyed ? parts[2] : "";
    std::string column = competitor;
    for (const own_column& o : own_columns) {
      if (o.competitor == competitor && o.variant == variant) column = o.column;
    }
    add_unique(out.competitors, column);
    const value* family = run.find("family_index");
    const position pos{column == "weft" ? 0 : 1, file_index, family ? family->number_or(0.0) : 0.0,
                       0};

    const value* error = run.find("error_occurred");
    if (error != nullptr && error->boolean_or(false)) {
      const value* message = run.find("error_message");
      out.failures.push_back(competitor + ": " + name + ": " +
                             (message ? message->string_or("?") : "(no message)"));
      if (keyed) {
        place(out, key, column, variant, pos);
        add_unique(out.rows[key].failed[column], variant);
      }
      continue;
    }
    if (!keyed) continue;

    metric kind = metric::real_time;
    std::optional<double> v;
    for (const counter_metric& m : counter_metrics) {
      if (const value* c = run.find(m.name)) {
        kind = m.kind;
        v = c->number_or(NAN);
        break;
      }
    }
    if (!v) {
      const value* t = run.find("real_time");
      const value* unit = run.find("time_unit");
      if (t == nullptr) continue;
      v = to_ns(t->number_or(NAN), unit ? unit->string_or("ns") : "ns");
    }

    place(out, key, column, variant, pos);
    row_data& row = out.rows[key];
    row.kind = kind;
    row.samples[column][variant].push_back(*v);

    int sub = 0;
    for (const extra_row& e : extra_rows) {
      ++sub;
      const value* c = run.find(e.counter);
      if (c == nullptr) continue;
      const std::string extra_key = key + " (" + std::string(e.label) + ")";
      position extra_pos = pos;
      std::get<3>(extra_pos) = sub;
      place(out, extra_key, column, variant, extra_pos);
      row_data& extra = out.rows[extra_key];
      extra.kind = e.kind;
      extra.samples[column][variant].push_back(c->number_or(NAN));
    }
  }
}

double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2.0;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Three significant digits or so, whatever the magnitude.
std::string readable(double v) {
  const double a = std::fabs(v);
  return fixed(v, a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
}

// Nanoseconds, in the largest unit that keeps the number at least 1.
std::string format_time(double v) {
  const double a = std::fabs(v);
  if (a < 1e3) return readable(v) + " ns";
  if (a < 1e6) return readable(v / 1e3) + " us";
  if (a < 1e9) return readable(v / 1e6) + " ms";
  return readable(v / 1e9) + " s";
}

std::string format_value(double v, metric kind) {
  if (std::isnan(v)) return "-";
  switch (kind) {
    case metric::cpu_ms:
      return fixed(v, 3) + " ms cpu";
    case metric::cpu_ms_per_s:
      return readable(v) + " ms/s cpu";
    case metric::rss_mib:
      return readable(v) + " MiB";
    case metric::cpu_ns:
      return format_time(v) + " cpu";
    case metric::round_trip_ns:
    case metric::per_task_ns:
    case metric::real_time:
      return format_time(v);
  }
  return "?";
}

std::string format_ratio(double r) {
  if (std::isnan(r) || std::isinf(r)) return "-";
  return (r >= 100 ? fixed(r, 0) : r >= 10 ? fixed(r, 1) : fixed(r, 2)) + "x";
}

// A competitor's best (lowest-median) variant in a row.
bool has_failed(const row_data& row, const std::string& competitor, const std::string& variant) {
  const auto it = row.failed.find(competitor);
  return it != row.failed.end() &&
         std::find(it->second.begin(), it->second.end(), variant) != it->second.end();
}

struct best {
  std::string variant;
  double median = NAN;
  std::size_t repetitions = 0;
  std::size_t variants = 0;  // how many variants the competitor has in this row
  bool failed = false;       // every variant failed verification
};

// The competitor's best (lowest-median) variant in `row` among those that
// passed verification.
std::optional<best> best_of(const row_data& row, const std::string& competitor) {
  const auto it = row.samples.find(competitor);
  const auto failed = row.failed.find(competitor);
  if (it == row.samples.end() && failed == row.failed.end()) return std::nullopt;
  std::optional<best> b;
  std::size_t variants = failed == row.failed.end() ? 0 : failed->second.size();
  if (it != row.samples.end()) {
    for (const auto& [variant, values] : it->second) {
      if (has_failed(row, competitor, variant)) continue;
      ++variants;
      const double m = median_of(values);
      if (!b || m < b->median) b = best{variant, m, values.size()};
    }
  }
  if (!b) {
    b.emplace();
    b->failed = true;
  }
  b->variants = variants;
  return b;
}

std::string target_cell(const std::string& key, const std::string& variant, double weft_median,
                        const row_data& row) {
  for (const target& t : targets) {
    if (t.row != key || t.variant != variant) continue;
    if (t.peer.empty()) {
      const bool met = weft_median <= t.limit;
      return std::string(met ? "met" : "MISSED") + " (" + std::string(t.text) + ")";
    }
    const std::optional<best> peer = best_of(row, std::string(t.peer));
    if (!peer || peer->failed)
      return "? (" + std::string(t.text) + ", no " + std::string(t.peer) + " result)";
    const double ratio = weft_median / peer->median;
    return std::string(ratio <= t.limit ? "met" : "MISSED") + " (" + std::string(t.text) + ")";
  }
  return "";
}

void print_table(const std::vector<std::vector<std::string>>& cells) {
  std::vector<std::size_t> width;
  for (const auto& line : cells) {
    width.resize(std::max(width.size(), line.size()), 0);
    for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  }
  auto print_line = [&](const std::vector<std::string>& line) {
    std::cout << '|';
    for (std::size_t i = 0; i < width.size(); ++i) {
      const std::string& cell = i < line.size() ? line[i] : std::string();
      std::cout << ' ' << cell << std::string(width[i] - cell.size(), ' ') << " |";
    }
    std::cout << '\n';
  };
  print_line(cells.front());
  std::cout << '|';
  for (const std::size_t w : width) std::cout << std::string(w + 2, '-') << '|';
  std::cout << '\n';
  for (std::size_t i = 1; i < cells.size(); ++i) print_line(cells[i]);
}

void print_report(const results& r) {
  // weft first, then the usual peers in a fixed order, then anything else.
  std::vector<std::string> peers;
  for (const std::string_view known : {"tbb", "omp", "starpu", "seq", "lapacke"}) {
    if (std::find(r.competitors.begin(), r.competitors.end(), known) != r.competitors.end()) {
      peers.emplace_back(known);
    }
  }
  for (const std::string& c : r.competitors) {
    if (c != "weft") add_unique(peers, c);
  }

  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header{"benchmark", "weft variant", "weft"};
  for (const std::string& p : peers) header.push_back(p);
  for (const std::string& p : peers) header.push_back("weft/" + p);
  header.push_back("target");
  cells.push_back(header);

  std::size_t min_reps = SIZE_MAX;
  std::size_t max_reps = 0;
  auto note_reps = [&](std::size_t n) {
    min_reps = std::min(min_reps, n);
    max_reps = std::max(max_reps, n);
  };

  std::vector<std::string> row_order = r.row_order;
  std::stable_sort(row_order.begin(), row_order.end(), [&](const auto& a, const auto& b) {
    return r.rows.at(a).first < r.rows.at(b).first;
  });
  for (const std::string& key : row_order) {
    const row_data& row = r.rows.at(key);
    std::vector<std::string> variants;
    for (const auto& [variant, pos] : row.weft_variants) variants.push_back(variant);
    std::stable_sort(variants.begin(), variants.end(), [&](const auto& a, const auto& b) {
      return row.weft_variants.at(a) < row.weft_variants.at(b);
    });
    if (variants.empty()) variants.emplace_back();  // peers only: one row without weft
    for (const std::string& variant : variants) {
      std::vector<std::string> line{key, variant.empty() ? "-" : variant};
      double weft_median = NAN;
      const bool weft_failed = !variant.empty() && has_failed(row, "weft", variant);
      if (!variant.empty() && !weft_failed) {
        const auto& values = row.samples.at("weft").at(variant);
        weft_median = median_of(values);
        note_reps(values.size());
      }
      line.push_back(weft_failed ? "FAILED" : format_value(weft_median, row.kind));
      std::vector<std::string> ratios;
      for (const std::string& p : peers) {
        const std::optional<best> b = best_of(row, p);
        if (!b) {
          line.emplace_back("-");
          ratios.emplace_back("-");
          continue;
        }
        if (b->failed) {
          line.emplace_back("FAILED");
          ratios.emplace_back("-");
          continue;
        }
        note_reps(b->repetitions);
        std::string cell = format_value(b->median, row.kind);
        if (b->variants > 1) cell += " [" + b->variant + "]";
        line.push_back(cell);
        ratios.push_back(variant.empty() ? "-" : format_ratio(weft_median / b->median));
      }
      line.insert(line.end(), ratios.begin(), ratios.end());
      line.push_back(variant.empty() || weft_failed ? ""
                                                    : target_cell(key, variant, weft_median, row));
      cells.push_back(line);
    }
  }

  if (cells.size() == 1) {
    std::cout << "no benchmark results\n";
  } else {
    print_table(cells);
    std::cout << "\nEach cell: median over ";
    if (max_reps == 0 || min_reps == max_reps) {
      std::cout << max_reps;
    } else {
      std::cout << min_reps << " to " << max_reps;
    }
    std::cout << " repetitions (fib_peak_rss: one process each).\n"
                 "Times are per batch, except round_trip: the median of single submit-and-wait\n"
                 "round trips. idle: CPU time of the whole process. fib_peak_rss: peak RSS of\n"
                 "the whole process. cholesky: one factorisation (lapacke: LAPACKE_dpotrf on\n"
                 "the whole matrix, OpenBLAS on 2 threads). flow_emplace, flow_gap: time per\n"
                 "task; flow_overhead: (measured - ideal) / tasks, and process CPU per task;\n"
                 "flow_latency: median emplace-to-start, and the CPU idle workers burn per\n"
                 "second. weft/<peer> below 1 means weft used less.\n";
  }

  if (!r.failures.empty()) {
    std::cout << "\nFAILED verification (" << r.failures.size() << "):\n";
    for (const std::string& f : r.failures) std::cout << "  " << f << '\n';
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " <google-benchmark-output.json>...\n";
    return 2;
  }
  results r;
  try {
    for (int i = 1; i < argc; ++i) read_file(argv[i], static_cast<std::size_t>(i), r);
  } catch (const std::exception& e) {
    std::cerr << argv[0] << ": " << e.what() << '\n';
    return 2;
  }
  print_report(r);
  return r.failures.empty() ? 0 : 1;
}
