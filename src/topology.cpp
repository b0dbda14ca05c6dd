// How many CPUs this process may use: affinity mask and cgroup v2 quota.
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

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

}  // namespace weft
