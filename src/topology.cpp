// How many CPUs this process may use (affinity mask and cgroup v2 quota),
// which ones, and how they share physical cores.
#include <sched.h>
#include <unistd.h>

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

#include "weft/detail/worker_start.hpp"
#include "weft/pool.hpp"

namespace weft {

namespace {

std::size_t affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    return std::max<std::size_t>(1, std::thread::hardware_concurrency());
  }
  return static_cast<std::size_t>(CPU_COUNT(&set));
}

// The cgroup v2 path of this process ("0::/some/path" in /proc/self/cgroup),
// or empty when the process is not in a unified hierarchy.
std::string cgroup_path() {
  std::ifstream in{"/proc/self/cgroup"};
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return {};
}

// CPUs allowed by a cpu.max file ("max 100000" or "<quota> <period>"); 0 when
// unlimited or unreadable.
std::size_t quota_cpus(const std::string& file) {
  std::ifstream in{file};
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return 0;
  double q = 0;
  std::istringstream{quota} >> q;
  if (q <= 0) return 0;
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(q / period)));
}

}  // namespace

std::size_t available_parallelism() {
  std::size_t cpus = std::max<std::size_t>(1, affinity_cpus());
  // A limit set on any ancestor cgroup applies too, so walk up to the root.
  std::string path = cgroup_path();
  while (!path.empty()) {
    const std::size_t limit = quota_cpus("/sys/fs/cgroup" + path + "/cpu.max");
    if (limit != 0) cpus = std::min(cpus, limit);
    if (path == "/") break;
    const std::size_t slash = path.find_last_of('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  return cpus;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  // The main thread's mask (its thread id is the process id), so that a
  // pool made on a pinned thread (a job of another, pinned pool) may still
  // pin to any CPU of the process; the calling thread's if that fails.
  if (sched_getaffinity(getpid(), sizeof(set), &set) != 0) {
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
      // No mask to read (more CPUs than CPU_SETSIZE): every CPU counted.
      std::vector<int> all(std::max(1U, std::thread::hardware_concurrency()));
      for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
      return all;
    }
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::vector<int> cpus_one_per_core() {
  return detail::one_per_core(allowed_cpus(), "/sys/devices/system/cpu");
}

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
