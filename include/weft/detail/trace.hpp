// What a traced pool records (docs/tracing.md): per thread, a preallocated
// ring of fixed-size records that only that thread writes, read by
// pool::write_trace() at any time and by the pool's destructor.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "weft/detail/platform.hpp"

namespace weft::detail {

enum class trace_kind : std::uint64_t {
  slice = 1,    // a job or a named task ran from `start` to `end`
  release = 2,  // an edge made the task `arg` ready, at `start`
  steal = 3,    // a job was stolen from worker `arg`, at `start`
  parked = 4,   // the worker slept from `start` to `end`
};

// One record: eight words, so that a ring is an array of cache lines.
struct trace_record_words {
  static constexpr std::size_t name_words = 3;
  std::uint64_t kind = 0;
  std::uint64_t start = 0;  // tracer::now() ticks
  std::uint64_t end = 0;
  std::uint64_t arg = 0;                       // slice: the edge's id that released it (0: none)
  std::uint64_t name[name_words] = {0, 0, 0};  // NUL-padded, truncated
};

// A single-writer ring that a reader may copy while it is written. The
// writer announces a record in `begun_` before it writes the record's words
// and publishes it in `done_` after; a reader copies what `done_` shows and
// then drops whatever `begun_` says may have been overwritten meanwhile (a
// sequence lock whose data are atomics, so the race is defined).
class trace_ring {
 public:
  trace_ring(std::size_t capacity, std::string track)
      : slots_(std::make_unique<slot[]>(capacity)), capacity_(capacity), track_(std::move(track)) {
    // A power of two (tracer rounds up): the slot is an index mask away.
  }

  // Owner thread only.
  void put(const trace_record_words& r) noexcept {
    const std::uint64_t k = begun_.load(std::memory_order_relaxed);
    // Relaxed: the release stores below order it before the words, for a
    // reader whose acquire load sees one of them.
    begun_.store(k + 1, std::memory_order_relaxed);
    slot& s = slots_[k & (capacity_ - 1)];
    // Release: pairs with the acquire loads in copy(); a reader that sees a
    // word of this record then sees begun_ >= k + 1 and drops the slot.
    s.words[0].store(r.kind, std::memory_order_release);
    s.words[1].store(r.start, std::memory_order_release);
    s.words[2].store(r.end, std::memory_order_release);
    s.words[3].store(r.arg, std::memory_order_release);
    for (std::size_t i = 0; i < trace_record_words::name_words; ++i) {
      s.words[4 + i].store(r.name[i], std::memory_order_release);
    }
    // Release: pairs with the acquire load in copy(): the record is whole.
    done_.store(k + 1, std::memory_order_release);
  }

  // Any thread: the records still in the ring, oldest first; `dropped`
  // counts those written over (or being written) and so lost.
  std::vector<trace_record_words> copy(std::uint64_t& dropped) const {
    // Acquire: pairs with put()'s release store of done_.
    const std::uint64_t done = done_.load(std::memory_order_acquire);
    const std::uint64_t first = done > capacity_ ? done - capacity_ : 0;
    std::vector<trace_record_words> out;
    out.reserve(static_cast<std::size_t>(done - first));
    for (std::uint64_t k = first; k < done; ++k) {
      const slot& s = slots_[k & (capacity_ - 1)];
      trace_record_words r;
      // Acquire: pairs with put()'s release stores of the words.
      r.kind = s.words[0].load(std::memory_order_acquire);
      r.start = s.words[1].load(std::memory_order_acquire);
      r.end = s.words[2].load(std::memory_order_acquire);
      r.arg = s.words[3].load(std::memory_order_acquire);
      for (std::size_t i = 0; i < trace_record_words::name_words; ++i) {
        r.name[i] = s.words[4 + i].load(std::memory_order_acquire);
      }
      out.push_back(r);
    }
    // Acquire: ordered after the loads above (which are acquire loads);
    // every record at an index below begun - capacity may have been
    // overwritten while we read it.
    const std::uint64_t begun = begun_.load(std::memory_order_acquire);
    const std::uint64_t valid_from = begun > capacity_ ? begun - capacity_ : 0;
    std::size_t skip = 0;
    if (valid_from > first) {
      skip = static_cast<std::size_t>(std::min<std::uint64_t>(valid_from - first, out.size()));
    }
    out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(skip));
    dropped = begun - out.size();
    return out;
  }

  // Owner thread only: a record without a name at `at`, and a named span.
  void instant(trace_kind kind, std::uint64_t at, std::uint64_t arg) noexcept {
    trace_record_words r;
    r.kind = static_cast<std::uint64_t>(kind);
    r.start = r.end = at;
    r.arg = arg;
    put(r);
  }
  void span(trace_kind kind, std::string_view name, std::uint64_t start,
            std::uint64_t end) noexcept;

  [[nodiscard]] const std::string& track() const noexcept { return track_; }

 private:
  struct alignas(64) slot {
    std::atomic<std::uint64_t> words[8];
  };
  std::unique_ptr<slot[]> slots_;
  const std::size_t capacity_;
  const std::string track_;
  std::atomic<std::uint64_t> begun_{0};  // records started (owner writes)
  std::atomic<std::uint64_t> done_{0};   // records finished (owner writes)
};

// A pool's trace: one ring per worker and the helper slot's ring, and a
// ring per other thread that runs the pool's jobs (made on its first job).
class tracer {
 public:
  tracer(std::size_t workers, std::size_t capacity, std::string path);

  // The calling thread's ring: worker `index` if the caller is that
  // worker, else (index = npos) the thread's own, made on first use.
  trace_ring& ring(std::size_t index) { return index != npos ? *workers_[index] : other_ring(); }
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  // A job's slice as recorded before its times are filled in.
  [[nodiscard]] const trace_record_words& job_record() const noexcept { return job_record_; }

  // A timestamp for a record: the platform's cycle counter (rdtsc on x86,
  // a fraction of steady_clock's cost), converted to nanoseconds when the
  // file is written.
  [[nodiscard]] static std::uint64_t now() noexcept { return platform::cycles(); }

  // Chrome trace event JSON (docs/tracing.md) of everything in the rings;
  // write_file throws std::system_error when the file cannot be written.
  void write(std::ostream& out, const std::string& pool_name) const;
  void write_file(const std::string& path, const std::string& pool_name) const;
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

 private:
  // The same instant on both clocks: the file's time zero, and with a
  // second reading at write time, the counter's rate.
  const std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
  const std::uint64_t origin_ticks_ = now();
  trace_ring& other_ring();
  const std::uint64_t serial_;
  const std::size_t capacity_;
  trace_record_words job_record_;
  const std::string path_;
  std::vector<std::unique_ptr<trace_ring>> workers_;
  mutable std::mutex others_mutex_;
  // Threads that are not workers, by thread; guarded by others_mutex_.
  std::vector<std::pair<std::thread::id, std::unique_ptr<trace_ring>>> others_;
};

// The file a new pool traces to: `configured` (pool_options::trace) if not
// empty, else WEFT_TRACE's value for the first pool that reads it and
// "<stem>.<k>.<extension>" for the k-th after it; empty: no trace.
std::string trace_path(const std::string& configured);

// Copies up to 23 bytes of `name` (cut at a UTF-8 character boundary)
// into a record's name words.
void set_trace_name(trace_record_words& r, std::string_view name) noexcept;

inline void trace_ring::span(trace_kind kind, std::string_view name, std::uint64_t start,
                             std::uint64_t end) noexcept {
  trace_record_words r;
  r.kind = static_cast<std::uint64_t>(kind);
  r.start = start;
  r.end = end;
  set_trace_name(r, name);
  put(r);
}

// The ring of the job this thread is running for a traced pool (null when
// none is), set by pool::execute(); graphs and flows add their tasks to it.
inline constinit thread_local trace_ring* current_trace = nullptr;

// A named task's slice and the edges it released: what graph and flow
// record around a task when the pool is traced. `id` identifies the task
// for the edges that release it (0: it has no predecessor).
class task_trace {
 public:
  task_trace(std::string_view name, std::uint64_t released_by) noexcept : ring_(current_trace) {
    if (ring_ == nullptr) return;
    set_trace_name(record_, name);
    record_.kind = static_cast<std::uint64_t>(trace_kind::slice);
    record_.arg = released_by;
    record_.start = tracer::now();
  }
  task_trace(const task_trace&) = delete;
  task_trace& operator=(const task_trace&) = delete;
  ~task_trace() {
    if (ring_ == nullptr) return;
    record_.end = tracer::now();
    ring_->put(record_);
  }
  // Renames the slice (before it ends).
  void rename(std::string_view name) noexcept {
    if (ring_ != nullptr) set_trace_name(record_, name);
  }
  [[nodiscard]] bool active() const noexcept { return ring_ != nullptr; }
  // The task made the task `id` ready.
  void released(std::uint64_t id) const noexcept {
    if (ring_ == nullptr) return;
    trace_record_words r;
    r.kind = static_cast<std::uint64_t>(trace_kind::release);
    r.start = tracer::now();
    r.arg = id;
    ring_->put(r);
  }

 private:
  trace_ring* ring_;
  trace_record_words record_;
};

}  // namespace weft::detail
