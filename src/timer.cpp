// Timers (weft/timer.hpp, docs/control.md "Timers"): one timer service per
// pool, made by the first timer; its thread, started then too, sleeps on a
// condition variable until the earliest deadline of a min-heap, and at a
// deadline hands the timer's job to the workers as an ordinary pool job.
//
// A timer's turn. At any moment at most one party may run or destroy a
// timer's callable: the heap while the timer waits in it, then the timer
// thread that took it out, then the job that runs it (a periodic job hands
// the turn back to the heap when it queues the next tick). cancel() sets the
// cancelled bit and, if the timer is in the heap, takes it out, and with it
// the turn. Whoever holds the turn and finds the timer cancelled destroys
// the callable; nobody else touches it. The callable and the deadline
// travel with the turn, under the service's mutex or through the pool's
// queues, which order every access.
//
// Lifetimes. The pool keeps its service alive (timer_service::self) until
// its destructor is done with it; each timer keeps it alive too (its
// shared_ptr), so that cancel() may lock its mutex after the pool is gone.
// The pool outlives the service's use of it: spawn_after and friends count
// a unit of the pool's work while they queue a timer, the timer thread
// counts one from the moment it takes fired timers out of the heap until
// their jobs are queued, and the destructor joins the thread.
#include "weft/timer.hpp"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "weft/detail/context.hpp"
#include "weft/detail/platform.hpp"
#include "weft/detail/scheduler.hpp"

namespace weft {

namespace detail {

namespace {

using clock = std::chrono::steady_clock;

// Timers the thread takes out of the heap per lock.
constexpr std::size_t fire_batch = 64;

// The first tick due + k * period (k >= 1) after now; time_point::max() when
// that cannot be represented.
clock::time_point next_tick(clock::time_point due, clock::duration period, clock::time_point now) {
  constexpr clock::duration longest = clock::duration::max();
  const clock::duration elapsed = now > due ? now - due : clock::duration::zero();
  if (period > longest - elapsed) return clock::time_point::max();
  const clock::duration step = period * (elapsed / period + 1);  // at most elapsed + period
  return saturating_add(due, step);
}

void mark_cancelled(timer_state& s) noexcept {
  // Relaxed: see timer_state::status.
  s.status.fetch_or(timer_state::cancelled, std::memory_order_relaxed);
}

void run_fired(const std::shared_ptr<timer_state>& s);

// The job a fired timer becomes: an ordinary detached job of the pool
// (pool::spawn), so its exception takes the pool's error path.
struct fired_timer {
  // A fired timer is cancelled through its handle (timer::cancel), and its
  // unit of work ends with the run: pool::purge() keeps it.
  using weft_keep_on_purge = void;
  std::shared_ptr<timer_state> state;
  void operator()() const { run_fired(state); }
};

}  // namespace

class timer_service {
 public:
  explicit timer_service(pool& p) : pool_(p) {}
  timer_service(const timer_service&) = delete;
  timer_service& operator=(const timer_service&) = delete;
  ~timer_service() = default;  // the thread was joined by stop()

  // Queues s (whose turn the caller holds) for `due`, starting the thread
  // if this is the first timer. False once the service has stopped: the
  // caller keeps the turn. Throws std::bad_alloc or std::system_error (no
  // thread) with nothing queued.
  bool schedule(const std::shared_ptr<timer_state>& s, clock::time_point due) {
    bool earliest = false;
    {
      const std::lock_guard lock{mutex_};
      if (stopped_) return false;
      make_room();
      if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
      s->due = due;
      push(s);
      earliest = s->heap_index == 0;
    }
    if (earliest) wake_.notify_one();
    return true;
  }

  // After a periodic run (its job holds the turn): queues the next tick,
  // unless the timer was cancelled meanwhile or the service has stopped.
  void reschedule(const std::shared_ptr<timer_state>& s) noexcept {
    bool queued = false;
    bool earliest = false;
    bool out_of_memory = false;
    {
      const std::lock_guard lock{mutex_};
      // Relaxed: cancel() sets the bit before it takes this mutex, so a
      // cancel() that took it before us is seen here; one that takes it
      // after us finds the timer in the heap and takes it out.
      if (!stopped_ && (s->status.load(std::memory_order_relaxed) & timer_state::cancelled) == 0) {
        try {
          make_room();
          s->due = next_tick(s->due, s->period, clock::now());
          push(s);
          queued = true;
          earliest = s->heap_index == 0;
        } catch (const std::bad_alloc&) {
          out_of_memory = true;
        }
      }
    }
    if (earliest) wake_.notify_one();
    if (queued) return;
    // The turn stays with us: the timer is over. The pool is alive (our
    // job has not finished).
    mark_cancelled(*s);
    s->destroy_callable();
    if (out_of_memory) {
      scheduler::report_error(pool_, std::make_exception_ptr(std::bad_alloc()));
    }
  }

  // For cancel(): takes s out of the heap if it waits there, and returns
  // the heap's reference (the turn) to the caller; else nullptr.
  std::shared_ptr<timer_state> remove(timer_state& s) noexcept {
    const std::lock_guard lock{mutex_};
    if (s.heap_index == timer_state::not_queued) return nullptr;
    return take(s.heap_index);
  }

  // Cancels every waiting timer and joins the thread; no timer is queued
  // from then on. Idempotent. The callables go outside the lock: their
  // destructors may call cancel() on other timers.
  void stop() noexcept {
    std::vector<std::shared_ptr<timer_state>> waiting;
    {
      const std::lock_guard lock{mutex_};
      stopped_ = true;
      waiting.swap(heap_);
      for (const auto& s : waiting) {
        s->heap_index = timer_state::not_queued;
        mark_cancelled(*s);
      }
    }
    wake_.notify_all();
    // Written under the mutex before stopped_ was set, and never after.
    if (thread_.joinable()) thread_.join();
    for (const auto& s : waiting) s->destroy_callable();
  }

  // The pool's reference to this service, until stop_timers(s, true).
  std::shared_ptr<timer_service> self;

 private:
  static bool earlier(const timer_state& a, const timer_state& b) noexcept {
    return a.due < b.due || (a.due == b.due && a.sequence < b.sequence);
  }

  // Makes room for one more timer, so that push() cannot throw. Doubling.
  void make_room() {
    if (heap_.size() == heap_.capacity())
      heap_.reserve(std::max<std::size_t>(16, 2 * heap_.size()));
  }

  void place(std::size_t i, std::shared_ptr<timer_state> s) noexcept {
    s->heap_index = i;
    heap_[i] = std::move(s);
  }

  void sift_up(std::size_t i) noexcept {
    std::shared_ptr<timer_state> s = std::move(heap_[i]);
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (!earlier(*s, *heap_[parent])) break;
      place(i, std::move(heap_[parent]));
      i = parent;
    }
    place(i, std::move(s));
  }

  void sift_down(std::size_t i) noexcept {
    std::shared_ptr<timer_state> s = std::move(heap_[i]);
    const std::size_t n = heap_.size();
    for (;;) {
      std::size_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && earlier(*heap_[child + 1], *heap_[child])) ++child;
      if (!earlier(*heap_[child], *s)) break;
      place(i, std::move(heap_[child]));
      i = child;
    }
    place(i, std::move(s));
  }

  // After make_room().
  void push(const std::shared_ptr<timer_state>& s) noexcept {
    s->sequence = next_sequence_++;
    heap_.push_back(s);
    sift_up(heap_.size() - 1);
  }

  std::shared_ptr<timer_state> take(std::size_t i) noexcept {
    std::shared_ptr<timer_state> out = std::move(heap_[i]);
    out->heap_index = timer_state::not_queued;
    std::shared_ptr<timer_state> last = std::move(heap_.back());
    heap_.pop_back();
    if (i < heap_.size()) {
      place(i, std::move(last));
      if (i > 0 && earlier(*heap_[i], *heap_[(i - 1) / 2])) {
        sift_up(i);
      } else {
        sift_down(i);
      }
    }
    return out;
  }

  // The timer thread.
  void run() noexcept {
    try {
      detail::platform::name_this_thread(pool_.name() + "-timer");
    } catch (const std::bad_alloc&) {
      // Unnamed, then.
    }
    // Wake at the deadline rather than up to 50 us after it (Linux's
    // default timer slack) or 15.6 ms (Windows' default timer tick): this
    // thread only ever sleeps until a deadline.
    const detail::platform::precise_sleeps precise;

    std::array<std::shared_ptr<timer_state>, fire_batch> fired;
    std::unique_lock lock{mutex_};
    for (;;) {
      if (stopped_) return;
      if (heap_.empty()) {
        wake_.wait(lock);
        continue;
      }
      const clock::time_point due = heap_.front()->due;
      const clock::time_point now = clock::now();
      if (now < due) {
        if (due == clock::time_point::max()) {
          wake_.wait(lock);
        } else {
          wake_.wait_until(lock, due);
        }
        continue;
      }
      std::size_t n = 0;
      while (n < fire_batch && !heap_.empty() && heap_.front()->due <= now) fired[n++] = take(0);
      // A unit of the pool's work from before the mutex is released until
      // the jobs are queued: a cancel() that finds a timer gone from the
      // heap is followed by a pool.wait() that waits for its job, and the
      // pool stays alive meanwhile. Refused once the pool is closing (a
      // service made during its destruction): those timers never run.
      std::optional<scheduler::unit> unit;
      try {
        unit = scheduler::enter(pool_);
      } catch (...) {
      }
      lock.unlock();
      post(fired.data(), n, unit);
      // Our references go outside the lock: a last one destroys a callable.
      for (std::size_t i = 0; i < n; ++i) fired[i].reset();
      lock.lock();
    }
  }

  void post(std::shared_ptr<timer_state>* fired, std::size_t n,
            const std::optional<scheduler::unit>& unit) noexcept {
    if (!unit) {
      for (std::size_t i = 0; i < n; ++i) {
        mark_cancelled(*fired[i]);
        fired[i]->destroy_callable();
      }
      return;
    }
    {
      // The jobs belong to our unit, as a job's spawns belong to the job:
      // counted in its epoch, and accepted while the pool closes (the
      // destructor drains them).
      const running_scope running{&pool_, unit->epoch()};
      for (std::size_t i = 0; i < n; ++i) {
        try {
          pool_.spawn(fired_timer{fired[i]});
        } catch (...) {
          // No memory for the job: the timer is over, and says why.
          mark_cancelled(*fired[i]);
          fired[i]->destroy_callable();
          scheduler::report_error(pool_, std::current_exception());
        }
      }
    }
    scheduler::leave(pool_, unit->epoch());
    scheduler::end_submission(pool_, *unit);  // our last touch of the pool
  }

  pool& pool_;
  std::mutex mutex_;
  std::condition_variable wake_;  // the timer thread waits on it
  // Guarded by mutex_.
  std::vector<std::shared_ptr<timer_state>> heap_;  // a min-heap on (due, sequence)
  std::uint64_t next_sequence_ = 0;
  bool stopped_ = false;
  std::thread thread_;  // started by the first schedule()
};

namespace {

void run_fired(const std::shared_ptr<timer_state>& s) {
  timer_state& t = *s;
  if (t.period == clock::duration::zero()) {
    // The one-shot run starts here, or never: this fetch_or and cancel()'s
    // are ordered one way or the other. Relaxed: see timer_state::status.
    const std::uint32_t old = t.status.fetch_or(timer_state::started, std::memory_order_relaxed);
    if ((old & timer_state::cancelled) != 0) {
      t.destroy_callable();
      return;
    }
    struct destroy_after {
      timer_state& t;
      explicit destroy_after(timer_state& s) noexcept : t(s) {}
      destroy_after(const destroy_after&) = delete;
      destroy_after& operator=(const destroy_after&) = delete;
      ~destroy_after() { t.destroy_callable(); }
    } const guard{t};
    t.invoke(s);  // an exception goes to the pool's error path (pool::spawn)
    return;
  }
  // Relaxed: see timer_state::status. A cancel() that returned before this
  // job started is seen (its fetch_or happens before).
  if ((t.status.load(std::memory_order_relaxed) & timer_state::cancelled) != 0) {
    t.destroy_callable();
    return;
  }
  try {
    t.invoke(s);
  } catch (...) {
    // A periodic timer whose run threw stops: one that fails every period
    // would otherwise fill the pool's error queue without bound.
    mark_cancelled(t);
    t.destroy_callable();
    throw;
  }
  t.service->reschedule(s);
}

// The pool's service, made if it has none yet.
timer_service& service_of(pool& p) {
  std::atomic<timer_service*>& slot = scheduler::timer_slot(p);
  // Acquire pairs with the release CAS below (another thread's).
  if (timer_service* s = slot.load(std::memory_order_acquire)) return *s;
  auto made = std::make_shared<timer_service>(p);
  made->self = made;
  timer_service* expected = nullptr;
  // Release publishes the service to the loads above and to the pool's
  // destructor; acquire (on failure) pairs with the winner's release.
  if (slot.compare_exchange_strong(expected, made.get(), std::memory_order_acq_rel,
                                   std::memory_order_acquire)) {
    return *made;  // kept alive by made->self
  }
  made->self.reset();
  return *expected;
}

}  // namespace

timer schedule_timer(pool& p, const std::shared_ptr<timer_state>& s, clock::time_point due) {
  // pool_closed from a thread that is not one of p's jobs once p closes.
  // The unit keeps p, and its service, alive until we return.
  const scheduler::unit u = scheduler::enter(p);
  struct leave_guard {
    pool& p;
    const scheduler::unit& u;
    leave_guard(pool& owner, const scheduler::unit& unit) noexcept : p(owner), u(unit) {}
    leave_guard(const leave_guard&) = delete;
    leave_guard& operator=(const leave_guard&) = delete;
    ~leave_guard() {
      scheduler::leave(p, u.epoch());
      scheduler::end_submission(p, u);  // last: our last touch of p
    }
  } const guard{p, u};
  timer handle{s};
  // One of p's jobs, during p's destruction: the timer could never fire
  // (the destructor cancels the waiting ones), so it starts cancelled.
  if (!scheduler::closing(p)) {
    timer_service& service = service_of(p);
    s->service = service.self;
    if (service.schedule(s, due)) return handle;
  }
  mark_cancelled(*s);
  s->destroy_callable();
  return handle;
}

void throw_bad_period() {
  throw usage_error(
      "weft::pool::spawn_every: the period must be positive (a zero or negative period "
      "would fire without end); use spawn_after for a single run");
}

void stop_timers(timer_service* s, bool release) noexcept {
  if (s == nullptr) return;
  s->stop();
  if (release) {
    // Freed here unless a timer's handle still holds it.
    const std::shared_ptr<timer_service> last = std::move(s->self);
  }
}

}  // namespace detail

bool timer::cancel() noexcept {
  if (!state_) return false;
  detail::timer_state& s = *state_;
  // Relaxed: see timer_state::status.
  const std::uint32_t old =
      s.status.fetch_or(detail::timer_state::cancelled, std::memory_order_relaxed);
  if ((old & detail::timer_state::cancelled) != 0) return false;
  if (s.service) {
    // Waiting in the heap: its turn is ours now, and so is the callable.
    if (const std::shared_ptr<detail::timer_state> queued = s.service->remove(s)) {
      queued->destroy_callable();
    }
  }
  return s.period != s.period.zero() || (old & detail::timer_state::started) == 0;
}

}  // namespace weft
