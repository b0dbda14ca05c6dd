// How many CPUs this process may use (affinity mask and cgroup v1 or v2 CPU
// quota), which ones, and how they share physical cores.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "weft/detail/platform.hpp"
#include "weft/detail/worker_start.hpp"
#include "weft/pool.hpp"

namespace weft {

namespace {

// The CPUs allowed by a quota of `quota` microseconds per `period`
// (rounded up: 1.5 CPUs' worth keeps two busy part of the time); 0 when
// there is no quota (v2's "max", v1's -1) or it makes no sense.
std::size_t quota_to_cpus(double quota, double period) {
  if (!(quota > 0) || !(period > 0)) return 0;
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(quota / period)));
}

// CPUs allowed by a cgroup v2 cpu.max file ("max 100000" or "<quota>
// <period>"); 0 when unlimited or unreadable.
std::size_t cpu_max_cpus(const std::string& dir) {
  std::ifstream in{dir + "/cpu.max"};
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max") return 0;
  double q = 0;
  std::istringstream{quota} >> q;
  return quota_to_cpus(q, period);
}

// CPUs allowed by a cgroup v1 cpu controller directory (cpu.cfs_quota_us,
// -1 when unlimited, and cpu.cfs_period_us); 0 when unlimited or
// unreadable.
std::size_t cfs_quota_cpus(const std::string& dir) {
  double quota = 0;
  double period = 0;
  if (!(std::ifstream{dir + "/cpu.cfs_quota_us"} >> quota)) return 0;
  if (!(std::ifstream{dir + "/cpu.cfs_period_us"} >> period)) return 0;
  return quota_to_cpus(quota, period);
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  for (;;) {
    const std::size_t at = text.find(sep);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

bool lists(std::string_view comma_list, std::string_view item) {
  const std::vector<std::string_view> items = split(comma_list, ',');
  return std::find(items.begin(), items.end(), item) != items.end();
}

// A path as mountinfo writes it, with space, tab, newline and backslash as
// octal escapes ("\040"), decoded.
std::string unescape(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && text.size() - i >= 4) {
      int code = 0;
      bool octal = true;
      for (std::size_t k = 1; k <= 3; ++k) {
        const char c = text[i + k];
        octal = octal && c >= '0' && c <= '7';
        code = code * 8 + (c - '0');
      }
      if (octal) {
        out.push_back(static_cast<char>(code));
        i += 3;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

// One cgroup hierarchy this process is in: its path there (from
// /proc/self/cgroup) and where the hierarchy is mounted (from
// /proc/self/mountinfo): the directory of the mount point, and the
// hierarchy's directory the mount shows (its root, "/" outside containers).
struct hierarchy {
  std::string path;   // empty: the process is in no such hierarchy
  std::string mount;  // empty: not mounted (or not readable)
  std::string mount_root;
};

// The directories of this process's cgroup and of each ancestor that the
// mount shows, innermost first; none when the cgroup lies outside it.
std::vector<std::string> cgroup_dirs(const hierarchy& h) {
  std::vector<std::string> dirs;
  if (h.path.empty() || h.mount.empty()) return dirs;
  std::string relative;  // the cgroup's path below the mount root
  if (h.mount_root == "/") {
    relative = h.path;
  } else if (h.path == h.mount_root) {
    relative = "/";
  } else if (h.path.rfind(h.mount_root + "/", 0) == 0) {
    relative = h.path.substr(h.mount_root.size());
  } else {
    return dirs;
  }
  // A limit set on any ancestor cgroup applies too: walk up to the mount.
  while (relative.size() > 1 && relative.back() == '/') relative.pop_back();
  for (;;) {
    dirs.push_back(relative == "/" ? h.mount : h.mount + relative);
    if (relative == "/" || relative.empty()) break;
    const std::size_t slash = relative.find_last_of('/');
    relative = slash == 0 ? "/" : relative.substr(0, slash);
  }
  return dirs;
}

}  // namespace

namespace detail {

std::size_t cgroup_cpu_limit(const std::string& root) {
  hierarchy v2;  // the unified hierarchy (cgroup v2): "0::/path"
  hierarchy v1;  // the cgroup v1 hierarchy with the cpu controller: "4:cpu,cpuacct:/path"
  {
    std::ifstream in{root + "/proc/self/cgroup"};
    std::string line;
    while (std::getline(in, line)) {
      const std::size_t first = line.find(':');
      const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
      if (second == std::string::npos) continue;
      const std::string_view controllers =
          std::string_view{line}.substr(first + 1, second - first - 1);
      std::string path = line.substr(second + 1);
      if (path.empty() || path.front() != '/') continue;
      if (line.compare(0, first, "0") == 0 && controllers.empty()) {
        v2.path = std::move(path);
      } else if (lists(controllers, "cpu")) {
        v1.path = std::move(path);
      }
    }
  }
  {
    // "36 25 0:31 /root /mount/point rw,nosuid - cgroup cgroup rw,cpu,cpuacct":
    // the fields before " - " are six and optional tags, then the file
    // system type, the source and the super-block options.
    std::ifstream in{root + "/proc/self/mountinfo"};
    std::string line;
    while (std::getline(in, line)) {
      const std::size_t dash = line.find(" - ");
      if (dash == std::string::npos) continue;
      const std::vector<std::string_view> fields =
          split(std::string_view{line}.substr(0, dash), ' ');
      const std::vector<std::string_view> tail =
          split(std::string_view{line}.substr(dash + 3), ' ');
      if (fields.size() < 5 || tail.size() < 3) continue;
      hierarchy* h = nullptr;
      if (tail[0] == "cgroup2") {
        h = &v2;
      } else if (tail[0] == "cgroup" && lists(tail[2], "cpu")) {
        h = &v1;
      }
      // The first mount of a hierarchy that shows this process's cgroup.
      if (h == nullptr || !h->mount.empty()) continue;
      hierarchy candidate{h->path, root + unescape(fields[4]), unescape(fields[3])};
      if (!cgroup_dirs(candidate).empty()) *h = std::move(candidate);
    }
  }
  std::size_t limit = 0;
  auto apply = [&limit](std::size_t cpus) {
    if (cpus != 0 && (limit == 0 || cpus < limit)) limit = cpus;
  };
  for (const std::string& dir : cgroup_dirs(v2)) apply(cpu_max_cpus(dir));
  for (const std::string& dir : cgroup_dirs(v1)) apply(cfs_quota_cpus(dir));
  return limit;
}

}  // namespace detail

std::size_t available_parallelism() {
  const std::size_t cpus = std::max<std::size_t>(1, detail::platform::affinity_count());
  const std::size_t limit = detail::platform::cpu_quota();
  return limit == 0 ? cpus : std::min(cpus, limit);
}

std::vector<int> allowed_cpus() { return detail::platform::allowed_cpus(); }

std::vector<int> cpus_one_per_core() { return detail::platform::one_per_core(allowed_cpus()); }

namespace detail {

std::optional<std::vector<int>> parse_cpu_list(std::string_view text) {
  // Bounds a range, so that a malformed file cannot ask for a huge list.
  constexpr int largest_cpu = 1 << 20;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  std::set<int> cpus;
  if (text.empty()) return std::vector<int>{};
  auto number = [&text](int& out) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    if (ec != std::errc{} || out < 0 || out > largest_cpu) return false;
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
    return true;
  };
  for (;;) {
    int first = 0;
    if (!number(first)) return std::nullopt;
    int last = first;
    if (!text.empty() && text.front() == '-') {
      text.remove_prefix(1);
      if (!number(last) || last < first) return std::nullopt;
    }
    for (int cpu = first; cpu <= last; ++cpu) cpus.insert(cpu);
    if (text.empty()) break;
    if (text.front() != ',') return std::nullopt;
    text.remove_prefix(1);
  }
  return std::vector<int>(cpus.begin(), cpus.end());
}

std::vector<int> one_per_core(const std::vector<int>& allowed, const std::string& cpu_dir) {
  auto siblings = [&cpu_dir](int cpu) -> std::optional<std::vector<int>> {
    const std::string topology = cpu_dir + "/cpu" + std::to_string(cpu) + "/topology/";
    for (const char* file : {"core_cpus_list", "thread_siblings_list"}) {
      std::ifstream in{topology + file};
      if (!in) continue;
      const std::string text{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
      if (auto list = parse_cpu_list(text)) return list;
    }
    return std::nullopt;
  };
  std::vector<int> firsts;
  std::set<int> covered;  // the CPUs of the cores already represented
  for (const int cpu : allowed) {
    if (covered.count(cpu) != 0) continue;
    firsts.push_back(cpu);
    if (auto core = siblings(cpu)) covered.insert(core->begin(), core->end());
  }
  return firsts;
}

}  // namespace detail

}  // namespace weft
