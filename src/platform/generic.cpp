// The platform layer where weft knows no system calls
// (include/weft/detail/platform.hpp; WEFT_PLATFORM=generic): only the C++
// standard library. Every CPU hardware_concurrency() counts is allowed and
// a core of its own, there is no quota, pinning fails with
// errc::function_not_supported (so pool_options::cpus makes the pool's
// constructor throw std::system_error), and threads go unnamed.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <thread>

#include "weft/detail/platform.hpp"

namespace weft::detail::platform {

std::vector<int> allowed_cpus() {
  std::vector<int> all(std::max(1U, std::thread::hardware_concurrency()));
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  return all;
}

std::size_t affinity_count() {
  return std::max<std::size_t>(1, std::thread::hardware_concurrency());
}

std::size_t cpu_quota() { return 0; }

std::vector<int> one_per_core(const std::vector<int>& allowed) { return allowed; }

int cpu_limit() noexcept { return static_cast<int>(affinity_count()); }

std::error_code pin_this_thread(int /*cpu*/) noexcept {
  return std::make_error_code(std::errc::function_not_supported);
}

const char* pin_call() noexcept { return "no pinning on this platform (WEFT_PLATFORM=generic)"; }

int current_cpu() noexcept { return -1; }

std::vector<int> thread_cpus() { return allowed_cpus(); }

std::string thread_name() { return {}; }

void name_this_thread(const std::string& /*name*/) noexcept {}

precise_sleeps::precise_sleeps() noexcept = default;
precise_sleeps::~precise_sleeps() = default;

std::chrono::microseconds process_cpu_time() noexcept {
  const std::clock_t used = std::clock();
  if (used == static_cast<std::clock_t>(-1)) return {};
  return std::chrono::microseconds{static_cast<std::int64_t>(static_cast<double>(used) * 1e6 /
                                                             static_cast<double>(CLOCKS_PER_SEC))};
}

void* aligned_allocate(std::size_t alignment, std::size_t bytes, bool /*huge_pages*/) noexcept {
  // malloc'd with room to align and, just below the aligned block, the
  // address to free.
  void* raw =
      std::malloc(bytes + alignment + sizeof(void*));  // NOLINT(cppcoreguidelines-no-malloc)
  if (raw == nullptr) return nullptr;
  void* aligned = static_cast<char*>(raw) + sizeof(void*);
  std::size_t room = bytes + alignment;
  aligned = std::align(alignment, bytes, aligned, room);  // never null: room was left
  std::memcpy(static_cast<char*>(aligned) - sizeof(void*), &raw, sizeof(raw));
  return aligned;
}

void aligned_free(void* memory) noexcept {
  if (memory == nullptr) return;
  void* raw = nullptr;
  std::memcpy(&raw, static_cast<const char*>(memory) - sizeof(void*), sizeof(raw));
  std::free(raw);  // NOLINT(cppcoreguidelines-no-malloc)
}

}  // namespace weft::detail::platform
