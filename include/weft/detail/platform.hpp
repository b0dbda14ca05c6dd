// The platform layer: everything weft asks of the operating system and the
// CPU beyond the C++ standard library, as small functions. The core includes
// this header and no system header; one source per platform implements the
// out-of-line ones (src/platform/linux.cpp, windows.cpp, generic.cpp, chosen
// by the build's WEFT_PLATFORM). docs/platforms.md lists what each platform
// does where it lacks a feature.
//
// Parking and waking a thread are not here: weft parks on std::mutex and
// std::condition_variable (sleep_controller, parker), which the standard
// library already maps to a futex on Linux and to the Windows primitives
// under MinGW-w64's winpthreads.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace weft::detail::platform {

// ---- CPU: spin-wait hint and cycle counter (inline: on hot paths) ----------

// Tells the CPU that this thread is in a spin-wait loop: `pause` on x86,
// `yield` on ARM, nothing elsewhere.
inline void spin_hint() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield" ::: "memory");
#endif
}

#if defined(_WIN32)
// QueryPerformanceCounter (src/platform/windows.cpp).
std::uint64_t performance_counter() noexcept;
#endif

// A cheap monotonic counter for the tracer's timestamps, in ticks of an
// unspecified constant rate (the tracer measures it against steady_clock):
// QueryPerformanceCounter on Windows, the time-stamp counter on x86 (rdtsc;
// invariant on every x86-64 made since 2008), the virtual counter
// cntvct_el0 on AArch64, steady_clock's nanoseconds elsewhere.
inline std::uint64_t cycles() noexcept {
#if defined(_WIN32)
  return performance_counter();
#elif defined(__x86_64__) || defined(__i386__)
  return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
  std::uint64_t ticks = 0;
  asm volatile("mrs %0, cntvct_el0" : "=r"(ticks));
  return ticks;
#else
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
#endif
}

// ---- topology and affinity -------------------------------------------------

// The CPUs this process may run on, ascending: Linux's affinity mask of the
// main thread, Windows' process affinity mask (CPUs of the process's
// processor group), 0 to hardware_concurrency() - 1 where there is no mask
// to read.
std::vector<int> allowed_cpus();

// How many CPUs the calling thread may run on (its affinity mask on Linux,
// the process's on Windows, hardware_concurrency() elsewhere); at least 1.
std::size_t affinity_count();

// The CPUs a CPU quota allows this process, rounded up, or 0 when none is
// set: cgroup v1 and v2 on Linux (detail::cgroup_cpu_limit), a job object's
// hard CPU rate cap on Windows, never elsewhere.
std::size_t cpu_quota();

// The first CPU of `allowed` (ascending) on each physical core: sysfs on
// Linux, GetLogicalProcessorInformation on Windows; `allowed` itself where
// the topology is unknown.
std::vector<int> one_per_core(const std::vector<int>& allowed);

// One more than the largest CPU number pin_this_thread() accepts
// (CPU_SETSIZE on Linux; 64, one processor group, on Windows).
int cpu_limit() noexcept;

// Pins the calling thread to `cpu`: an empty error_code on success, else
// the system's error; errc::function_not_supported where the platform has
// no pinning (the generic one). pin_call() names the system call for
// messages.
std::error_code pin_this_thread(int cpu) noexcept;
const char* pin_call() noexcept;

// The CPU the calling thread runs on now (sched_getcpu,
// GetCurrentProcessorNumber), -1 where unknown.
int current_cpu() noexcept;

// The CPUs the calling thread may run on (its affinity mask), ascending;
// allowed_cpus() where the platform has no pinning.
std::vector<int> thread_cpus();

// ---- threads -----------------------------------------------------------------

// Names the calling thread for debuggers and top: pthread_setname_np on
// Linux (its last 15 characters: the kernel's limit), SetThreadDescription
// on Windows (where the system has it); nothing elsewhere. Never throws.
void name_this_thread(const std::string& name) noexcept;

// The calling thread's name as name_this_thread() set it (Linux: its last
// 15 characters); empty where threads have no name or it cannot be read.
std::string thread_name();

// While one lives, the calling thread's timed sleeps end close to their
// deadline: Linux's timer slack of the thread set to 1 ns (from the default
// 50 us), Windows' timer resolution raised to 1 ms (timeBeginPeriod, which
// is process-wide, undone by the destructor); nothing elsewhere.
class precise_sleeps {
 public:
  precise_sleeps() noexcept;
  // Out of line: Windows undoes timeBeginPeriod here, Linux has nothing to.
  ~precise_sleeps();  // NOLINT(performance-trivially-destructible)
  precise_sleeps(const precise_sleeps&) = delete;
  precise_sleeps& operator=(const precise_sleeps&) = delete;
};

#if defined(_WIN32)
// Runs destroy(object) when the calling thread ends (a fiber-local storage
// callback), newest first. Throws std::system_error if the system has no
// fiber-local slot left.
void at_thread_exit(void* object, void (*destroy)(void*) noexcept);
#endif

// The calling thread's T, default-constructed on first use and destroyed
// when the thread ends. Elsewhere a thread_local; on Windows a heap object
// destroyed from a fiber-local storage callback, because MinGW-w64's
// emulated TLS frees a thread's thread_locals (winpthreads' key destructor)
// before their destructors run, which would then run on freed memory. The
// callback comes later still (as measured under wine): by then the
// thread's other thread_locals read as new, zero-initialised ones, so T's
// destructor must use only its own members (it may write thread_locals;
// nothing reads them after). For a T with a non-trivial destructor.
template <class T>
T& per_thread() {
#if defined(_WIN32)
  static constinit thread_local T* mine = nullptr;
  if (mine == nullptr) {
    auto made = std::make_unique<T>();
    at_thread_exit(made.get(), [](void* object) noexcept {
      delete static_cast<T*>(object);
      mine = nullptr;
    });
    mine = made.release();
  }
  return *mine;
#else
  thread_local T mine;
  return mine;
#endif
}

// CPU time (user + system) this process has used so far: getrusage on
// Linux, GetProcessTimes on Windows, std::clock() elsewhere. For tests and
// diagnostics.
std::chrono::microseconds process_cpu_time() noexcept;

// ---- memory --------------------------------------------------------------------

// `bytes` (a multiple of `alignment`, a power of two) aligned to
// `alignment`, or nullptr; freed with aligned_free(). With `huge_pages`, a
// hint that the block be backed by transparent huge pages (madvise on
// Linux; ignored elsewhere).
void* aligned_allocate(std::size_t alignment, std::size_t bytes, bool huge_pages) noexcept;
void aligned_free(void* memory) noexcept;

}  // namespace weft::detail::platform
