// The platform layer on Windows (include/weft/detail/platform.hpp), for
// MinGW-w64: the process affinity mask and GetLogicalProcessorInformation
// for topology, SetThreadAffinityMask for pinning, a job object's CPU rate
// cap for the quota, SetThreadDescription, timeBeginPeriod,
// QueryPerformanceCounter, fiber-local storage for per-thread objects, and
// _aligned_malloc. CPU numbers are bit positions in the process's
// processor group, so at most 64.
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
// After windows.h, which it needs.
#include <malloc.h>
#include <mmsystem.h>

#include <algorithm>
#include <cmath>
#include <system_error>
#include <thread>

#include "weft/detail/platform.hpp"

namespace weft::detail::platform {

namespace {

constexpr int group_cpus = 64;

// The process's affinity mask; every CPU hardware_concurrency() counts if
// it cannot be read.
DWORD_PTR process_mask() noexcept {
  DWORD_PTR process = 0;
  DWORD_PTR system = 0;
  if (GetProcessAffinityMask(GetCurrentProcess(), &process, &system) != 0 && process != 0) {
    return process;
  }
  const unsigned n = std::clamp(std::thread::hardware_concurrency(), 1U, 64U);
  return n == 64 ? ~DWORD_PTR{0} : (DWORD_PTR{1} << n) - 1;
}

std::vector<int> cpus_of(DWORD_PTR mask) {
  std::vector<int> cpus;
  for (int cpu = 0; cpu < group_cpus; ++cpu) {
    if ((mask >> cpu) & 1U) cpus.push_back(cpu);
  }
  return cpus;
}

}  // namespace

std::uint64_t performance_counter() noexcept {
  LARGE_INTEGER now;
  QueryPerformanceCounter(&now);  // cannot fail since Windows XP
  return static_cast<std::uint64_t>(now.QuadPart);
}

std::vector<int> allowed_cpus() { return cpus_of(process_mask()); }

std::size_t affinity_count() { return std::max<std::size_t>(1, allowed_cpus().size()); }

std::size_t cpu_quota() {
  // A hard cap set on a job object this process is in (Windows 8 and
  // later), in hundredths of a percent of all the system's CPUs.
  JOBOBJECT_CPU_RATE_CONTROL_INFORMATION rate{};
  if (QueryInformationJobObject(nullptr, JobObjectCpuRateControlInformation, &rate, sizeof(rate),
                                nullptr) == 0) {
    return 0;  // in no job, or no rate control
  }
  const DWORD enabled = JOB_OBJECT_CPU_RATE_CONTROL_ENABLE | JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP;
  if ((rate.ControlFlags & enabled) != enabled || rate.CpuRate == 0) return 0;
  const double cpus = static_cast<double>(rate.CpuRate) / 10000.0 *
                      static_cast<double>(std::max(1U, std::thread::hardware_concurrency()));
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(cpus)));
}

std::vector<int> one_per_core(const std::vector<int>& allowed) {
  DWORD bytes = 0;
  GetLogicalProcessorInformation(nullptr, &bytes);
  std::vector<SYSTEM_LOGICAL_PROCESSOR_INFORMATION> info(
      bytes / sizeof(SYSTEM_LOGICAL_PROCESSOR_INFORMATION));
  if (info.empty() || GetLogicalProcessorInformation(info.data(), &bytes) == 0) return allowed;
  std::vector<int> firsts;
  DWORD_PTR covered = 0;  // the CPUs of the cores already represented
  for (const int cpu : allowed) {
    const DWORD_PTR bit = DWORD_PTR{1} << cpu;
    if ((covered & bit) != 0) continue;
    firsts.push_back(cpu);
    for (const SYSTEM_LOGICAL_PROCESSOR_INFORMATION& entry : info) {
      if (entry.Relationship == RelationProcessorCore && (entry.ProcessorMask & bit) != 0) {
        covered |= entry.ProcessorMask;
      }
    }
  }
  return firsts;
}

int cpu_limit() noexcept { return group_cpus; }

std::error_code pin_this_thread(int cpu) noexcept {
  if (cpu < 0 || cpu >= group_cpus) return std::make_error_code(std::errc::invalid_argument);
  if (SetThreadAffinityMask(GetCurrentThread(), DWORD_PTR{1} << cpu) == 0) {
    return {static_cast<int>(GetLastError()), std::system_category()};
  }
  return {};
}

const char* pin_call() noexcept { return "SetThreadAffinityMask"; }

int current_cpu() noexcept { return static_cast<int>(GetCurrentProcessorNumber()); }

std::vector<int> thread_cpus() {
  // Windows has no call that reads a thread's mask: setting one returns
  // the old, which is then put back.
  HANDLE self = GetCurrentThread();
  const DWORD_PTR old = SetThreadAffinityMask(self, process_mask());
  if (old == 0) return allowed_cpus();
  SetThreadAffinityMask(self, old);
  return cpus_of(old);
}

namespace {

// A function of kernel32 that older Windows (and some wine) lack, or nullptr.
template <class F>
F kernel32_function(const char* name) noexcept {
  HMODULE kernel = GetModuleHandleW(L"kernel32.dll");
  FARPROC found = kernel == nullptr ? nullptr : GetProcAddress(kernel, name);
  // A function pointer cast is how GetProcAddress is used.
  return reinterpret_cast<F>(reinterpret_cast<void (*)()>(found));
}

}  // namespace

std::string thread_name() {
  using get_description = HRESULT(WINAPI*)(HANDLE, PWSTR*);
  static const auto get = kernel32_function<get_description>("GetThreadDescription");
  PWSTR wide = nullptr;
  if (get == nullptr || FAILED(get(GetCurrentThread(), &wide)) || wide == nullptr) return {};
  std::string name;
  const int length = WideCharToMultiByte(CP_UTF8, 0, wide, -1, nullptr, 0, nullptr, nullptr);
  if (length > 1) {
    name.resize(static_cast<std::size_t>(length));
    WideCharToMultiByte(CP_UTF8, 0, wide, -1, name.data(), length, nullptr, nullptr);
    name.pop_back();  // the NUL
  }
  LocalFree(wide);
  return name;
}

void name_this_thread(const std::string& name) noexcept {
  // SetThreadDescription exists from Windows 10 1607 on (and not in every
  // wine): looked up rather than linked, so older systems just go unnamed.
  using set_description = HRESULT(WINAPI*)(HANDLE, PCWSTR);
  static const auto set = kernel32_function<set_description>("SetThreadDescription");
  if (set == nullptr) return;
  const int length = MultiByteToWideChar(CP_UTF8, 0, name.c_str(), -1, nullptr, 0);
  if (length <= 0) return;
  try {
    std::wstring wide(static_cast<std::size_t>(length), L'\0');
    MultiByteToWideChar(CP_UTF8, 0, name.c_str(), -1, wide.data(), length);
    set(GetCurrentThread(), wide.c_str());
  } catch (const std::bad_alloc&) {
    // Unnamed, then.
  }
}

precise_sleeps::precise_sleeps() noexcept {
  // The default tick is 15.6 ms: a timer thread would fire that late.
  timeBeginPeriod(1);
}

precise_sleeps::~precise_sleeps() { timeEndPeriod(1); }

namespace {

// A thread's objects to destroy at its exit, newest first: the value of
// its fiber-local slot.
struct exit_entry {
  void* object;
  void (*destroy)(void*) noexcept;
  exit_entry* next;
};

void WINAPI run_exits(void* head) {
  for (auto* e = static_cast<exit_entry*>(head); e != nullptr;) {
    e->destroy(e->object);
    exit_entry* next = e->next;
    delete e;
    e = next;
  }
}

DWORD exit_slot() {
  static const DWORD slot = FlsAlloc(&run_exits);
  return slot;
}

}  // namespace

void at_thread_exit(void* object, void (*destroy)(void*) noexcept) {
  const DWORD slot = exit_slot();
  if (slot == FLS_OUT_OF_INDEXES) {
    throw std::system_error(static_cast<int>(ERROR_NO_SYSTEM_RESOURCES), std::system_category(),
                            "weft: no fiber-local storage slot left for per-thread state");
  }
  auto* entry = new exit_entry{object, destroy, static_cast<exit_entry*>(FlsGetValue(slot))};
  if (FlsSetValue(slot, entry) == 0) {
    const auto error = static_cast<int>(GetLastError());
    delete entry;
    throw std::system_error(error, std::system_category(),
                            "weft: could not set a fiber-local storage slot");
  }
}

std::chrono::microseconds process_cpu_time() noexcept {
  FILETIME created;
  FILETIME exited;
  FILETIME kernel;
  FILETIME user;
  if (GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel, &user) == 0) return {};
  // FILETIMEs count 100 ns.
  const auto count = [](const FILETIME& t) {
    return (std::uint64_t{t.dwHighDateTime} << 32U) | t.dwLowDateTime;
  };
  return std::chrono::microseconds{(count(kernel) + count(user)) / 10};
}

void* aligned_allocate(std::size_t alignment, std::size_t bytes, bool /*huge_pages*/) noexcept {
  // Large pages need SeLockMemoryPrivilege and VirtualAlloc: not worth it
  // for a hint.
  return _aligned_malloc(bytes, alignment);
}

void aligned_free(void* memory) noexcept { _aligned_free(memory); }

}  // namespace weft::detail::platform
