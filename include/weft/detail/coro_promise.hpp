// weft::coro<T> and its promise: a lazy coroutine whose frames come from the
// per-thread frame cache, and which hands control on by symmetric transfer
// (docs/coroutines.md).
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "../errors.hpp"
#include "../future.hpp"
#include "context.hpp"
#include "coro_frame.hpp"
#include "job.hpp"
#include "local.hpp"
#include "scheduler.hpp"
#include "trace.hpp"

namespace weft {

class pool;
class flow_task;
template <class T = void>
class coro;

namespace detail {

// What every coroutine of one start (submit, spawn, sync_wait) shares: the
// pool they run on, the epoch parity their unit of work is counted in, and
// the stop request of the start's future (future::cancel()).
struct coro_root {
  pool* owner = nullptr;
  unsigned epoch = 0;
  // Relaxed: a request, read at the next suspension point; nothing is
  // published with it.
  std::atomic<bool> stop{false};
};

// What runs after the coroutine a job resumed has finished or suspended
// (coro_drive()): a coroutine that finishes under a job that drives it
// frees its own frame at its final suspension point (GCC and Clang do that
// inline, without a second entry into the coroutine's function) and leaves
// here what comes next, instead of transferring to it while its frame
// still exists: the awaiting coroutine, the join's next child taken back
// from the deque, the join's parent, or a join whose pending count it must
// decrement once its frame is gone (`link`, by `owed`). So a finished
// child's parameters are destroyed before anything that waits for it goes
// on, and a hand-over never nests a native frame, whether or not the
// compiler makes symmetric transfers tail calls.
struct coro_join_link;
struct coro_after {
  std::coroutine_handle<> next;
  coro_join_link* link = nullptr;
  std::size_t owed = 0;
  [[nodiscard]] bool empty() const noexcept { return !next && link == nullptr; }
};
// The innermost coro_drive()'s record on this thread; null outside one (a
// coroutine resumed by a foreign awaitable's thread: it hands on by
// symmetric transfer, and its awaiter frees its frame). Constant-
// initialised: no TLS guard.
inline constinit thread_local coro_after* coro_after_here = nullptr;

// Resumes h, then whatever the coroutines it ran left in this drive's
// record, until one suspends with nothing left.
void coro_drive(std::coroutine_handle<> h) noexcept;

// Runs a job that resumes coroutine h of start r, on this thread: the job's
// running_scope (the pool and epoch parity its spawns count in), the drive
// (coro_drive()), and, in a traced pool, a slice named `label`. The
// coroutine may free the job as soon as it resumes: only copies are used.
[[gnu::always_inline]] inline void coro_run(const coro_root& r, std::coroutine_handle<> h,
                                            const char* label) noexcept;

// Resumes a suspended coroutine as a job of its start's pool: a coroutine
// whose future became ready, whose timer fired, whose flow task finished.
// Lives in the frame of the coroutine that waits, which may end (and free
// it) as soon as h.resume() begins.
struct coro_resume : job {
  std::coroutine_handle<> handle;
  coro_root* root = nullptr;
  // The resumption's slice in a traced pool's trace (docs/tracing.md,
  // docs/coroutines.md): what the coroutine waited for.
  const char* label = "coro";

  coro_resume() noexcept { this->run = &resume_here; }

  // Before a suspension: the coroutine to resume, its start's root, and
  // what it waits for (the slice's label).
  template <class P>
  void arm(std::coroutine_handle<P> h, const char* what) noexcept {
    handle = h;
    root = h.promise().root_;
    label = what;
  }
  static void resume_here(job* j) noexcept {
    auto* self = static_cast<coro_resume*>(j);
    coro_run(*self->root, self->handle, self->label);  // the last touch of *self
  }

  // The resumption as a slice named `label`, inside the job's slice. The
  // coroutine may free *this while it runs: only copies are used after.
  [[gnu::noinline]] static void traced_resume(std::coroutine_handle<> h,
                                              const char* label) noexcept {
    const task_trace slice{label, 0};
    coro_drive(h);
  }
};

inline void coro_run(const coro_root& r, std::coroutine_handle<> h, const char* label) noexcept {
  const running_scope running{r.owner, r.epoch};
  // A traced pool's job (pool::execute set the thread's ring): one
  // predictable branch otherwise.
  if (current_trace != nullptr) [[unlikely]] {
    coro_resume::traced_resume(h, label);
    return;
  }
  coro_drive(h);
}

// A join's child as its siblings and its queue see it (detail/coro_join.hpp,
// docs/coroutines.md, "Join: what is stolen"): the job that resumes it when
// it is taken from a deque, and its place in the join. Made by the join's
// await_suspend(), every field at once; plain data, never destroyed.
struct coro_join_link;
struct coro_join_slot : job {
  std::coroutine_handle<> handle;
  coro_join_link* link;
  std::size_t index;
  // How many of the join's children finished into this one: 1 (itself)
  // plus those handed on to it one after the other (finished()). Written by
  // the parent before the slot is queued, and by the sibling before this
  // one that took the slot back from its own deque, which then owns it.
  std::size_t owed = 1;

  coro_join_slot(std::coroutine_handle<> h, coro_join_link* l, std::size_t i) noexcept
      : handle(h), link(l), index(i) {
    this->run = &resume_child;
  }
  // Taken from a deque: by a thief, by its own worker's loop, or run at
  // once when the deque could not take it.
  static void resume_child(job* j) noexcept;
};

// What a join's children share. `home`: the worker on whose deque children
// 1..count-1 wait; null when they are chained instead (a thread that is not
// one of the pool's workers: each finished child hands on to the next).
// Every field is set by the join's await_suspend(), before any child runs.
struct coro_join_link {
  std::atomic<std::size_t> pending;
  std::coroutine_handle<> parent;
  coro_join_slot* slots;
  std::size_t count;
  worker* home;
  coro_root* root;
};

inline void coro_drive(std::coroutine_handle<> h) noexcept {
  coro_after here;
  coro_after* const outer = std::exchange(coro_after_here, &here);
  for (;;) {
    h.resume();
    if (here.next) {
      h = std::exchange(here.next, nullptr);
      continue;
    }
    if (here.link == nullptr) break;
    coro_join_link& j = *std::exchange(here.link, nullptr);
    // acq_rel: release publishes the results of the finished child and of
    // those it carries to whoever brings the count to zero; acquire, in
    // that one, sees every other child's (the decrements form one release
    // sequence). It then resumes the parent, which reads all results. Only
    // that one reads j after the decrement: the parent may end the join as
    // soon as the count is zero.
    if (j.pending.fetch_sub(here.owed, std::memory_order_acq_rel) != here.owed) break;
    h = j.parent;
  }
  coro_after_here = outer;
}

inline void coro_join_slot::resume_child(job* j) noexcept {
  auto* self = static_cast<coro_join_slot*>(j);
  coro_run(*self->link->root, self->handle, "coro join child");  // the last touch of *self
}

template <class T>
class coro_promise;
template <class U>
class coro_future_awaiter;
class coro_flow_awaiter;
// coro_flow_awaiter, named through F so that it needs to be complete only
// where a flow task is awaited (detail/coro_flow.hpp, included by
// weft/coro.hpp).
template <class F>
struct coro_flow_awaiter_of {
  using type = coro_flow_awaiter;
};
template <class T>
struct coro_awaiter;
struct coro_access;
template <class... Ts>
struct coro_join_args;
template <class... Ts>
class coro_join_awaiter;

// A coroutine's result, in whatever waits for it (an awaiter, a join, a
// start): the coroutine writes it before it finishes, and its frame may be
// gone by the time the waiter reads it.
struct coro_result_base {
  std::exception_ptr error;
  // The frame of a coroutine that finished suspended (no drive: resumed by
  // a foreign awaitable's thread), freed with this.
  std::coroutine_handle<> leftover;

  coro_result_base() = default;
  coro_result_base(const coro_result_base&) = delete;
  coro_result_base& operator=(const coro_result_base&) = delete;
  coro_result_base(coro_result_base&&) = delete;
  coro_result_base& operator=(coro_result_base&&) = delete;
  ~coro_result_base() {
    if (leftover) leftover.destroy();
  }
};
template <class T>
struct coro_result : coro_result_base {
  std::optional<T> value;
  // The result, or the exception rethrown (once the coroutine finished).
  T take() {
    if (error) std::rethrow_exception(std::exchange(error, nullptr));
    // Engaged unless the body threw. NOLINTNEXTLINE(bugprone-unchecked-optional-access)
    return std::move(*value);
  }
};
template <>
struct coro_result<void> : coro_result_base {
  void take() {
    if (error) std::rethrow_exception(std::exchange(error, nullptr));
  }
};

// What a promise knows whatever its value type.
class coro_promise_base {
 public:
  // Frames from the thread's frame cache (coro_frame.hpp).
  static void* operator new(std::size_t n) { return coro_frames::allocate(n); }
  static void operator delete(void* p, std::size_t n) noexcept { coro_frames::release(p, n); }

  // Lazy: nothing runs until the coroutine is awaited, joined or started.
  std::suspend_always initial_suspend() noexcept { return {}; }

  // At the final suspension point. Under a drive (coro_drive(), every job
  // that resumes a coroutine) an awaited coro or a join's child leaves what
  // comes next in the drive's record and does not suspend: its frame frees
  // itself at once, and the drive goes on. Otherwise (a start's root, whose
  // frame the start frees; or a coroutine resumed by a foreign awaitable's
  // thread) it suspends and transfers to whoever waits (finished()).
  struct final_awaiter {
    coro_promise_base& p;
    [[nodiscard]] bool await_ready() const noexcept { return p.hand_on(); }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      return p.finished(h);
    }
    void await_resume() const noexcept {}
  };
  final_awaiter final_suspend() noexcept { return {*this}; }
  void unhandled_exception() noexcept { result_->error = std::current_exception(); }

  // The cancellation point of every co_await (docs/coroutines.md,
  // "Cancellation"): once the start's future was cancelled, the next
  // co_await throws job_cancelled instead of suspending.
  template <class A>
  A&& await_transform(A&& a) const {
    check_stop();
    return std::forward<A>(a);
  }
  // co_await of a weft::future (detail/coro_await.hpp).
  template <class U>
  coro_future_awaiter<U> await_transform(future<U>& f) const {
    check_stop();
    return coro_future_awaiter<U>{f};
  }
  template <class U>
  coro_future_awaiter<U> await_transform(future<U>&& f) const {
    check_stop();
    return coro_future_awaiter<U>{f};
  }
  // co_await weft::join(coros...) (detail/coro_join.hpp): the awaiter is
  // made in place, in the frame, and borrows the children.
  template <class... Ts>
  coro_join_awaiter<Ts...> await_transform(coro_join_args<Ts...>&& j) const {
    check_stop();
    return coro_join_awaiter<Ts...>{j.children};
  }
  template <class... Ts>
  coro_join_awaiter<Ts...> await_transform(coro_join_args<Ts...>& j) const {
    check_stop();
    return coro_join_awaiter<Ts...>{j.children};
  }
  // co_await of a weft::flow_task (detail/coro_flow.hpp).
  template <class F>
  requires std::is_same_v<std::remove_cvref_t<F>, flow_task>
  typename coro_flow_awaiter_of<F>::type await_transform(F&& t) const {
    check_stop();
    return typename coro_flow_awaiter_of<F>::type{t};
  }
  void check_stop() const {
    // Relaxed: see coro_root::stop.
    if (root_ != nullptr && root_->stop.load(std::memory_order_relaxed)) [[unlikely]] {
      throw job_cancelled("weft::coro: the future of this coroutine's start was cancelled");
    }
  }

  // The final hand-on under a drive (final_awaiter): true if it left what
  // comes next in the drive's record. An occupied record belongs to a
  // coroutine that a foreign awaitable resumed inside another's body (the
  // drive runs it once that body returns to it): this one transfers.
  [[nodiscard]] bool hand_on() noexcept {
    coro_after* const a = coro_after_here;
    if (a == nullptr || !a->empty()) return false;
    if (continuation_) {
      a->next = continuation_;
      return true;
    }
    if (slot_ == nullptr) return false;  // a start's root
    const handover h = finish_child(*slot_);
    a->next = h.to;
    a->link = h.link;
    a->owed = h.owed;
    return true;
  }

  // Suspended at the final point (final_awaiter): transfers to whoever
  // waits, which frees this frame (coro_result_base::leftover) once it has
  // resumed, or, for a start's root, completes its future and frees it.
  [[nodiscard]] std::coroutine_handle<> finished(std::coroutine_handle<> self) noexcept {
    if (continuation_) {
      result_->leftover = self;
      return continuation_;
    }
    if (slot_ != nullptr) {
      result_->leftover = self;  // before the decrement below publishes it
      const handover h = finish_child(*slot_);
      if (h.to) return h.to;
      // acq_rel: as in coro_drive(). Only the last one reads j after it.
      if (h.link->pending.fetch_sub(h.owed, std::memory_order_acq_rel) == h.owed) {
        return h.link->parent;
      }
      return std::noop_coroutine();
    }
    // A start's root: completes its future, and frees this frame.
    void (*const done)(void*) noexcept = done_;
    done(done_arg_);
    return std::noop_coroutine();
  }

  // What a finished join child hands on to: `to`, or, when that is null,
  // the parent once `pending` drops by `owed` to zero (the decrement is the
  // caller's: the drive's after the frame is gone, or finished()'s).
  struct handover {
    std::coroutine_handle<> to;
    coro_join_link* link;
    std::size_t owed;
  };

  // A join's child has finished (docs/coroutines.md, "Join: what is
  // stolen"). If the next child is still on this worker's deque (its top,
  // unless a thief took it), this one takes it back and hands on to it:
  // nothing was stolen, so nothing needs an atomic, and the next one carries
  // this one's completion (owed). A child that finds its next sibling gone,
  // or that is the last, accounts for what it carries in `pending`; the one
  // that brings it to zero resumes the parent. A child that carries every
  // child's completion (owed == count: the children ran one after the other,
  // each handed on to by the one before) resumes the parent with no atomic
  // at all. Chained children (no home: a thread that is not one of the
  // pool's workers) hand on to the next one in any case: the parent waits
  // for this hand-over, so the next one is alive.
  [[nodiscard]] static handover finish_child(coro_join_slot& s) noexcept {
    coro_join_link& j = *s.link;
    const std::size_t owed = s.owed;
    const std::size_t count = j.count;
    if (s.index + 1 < count) {
      coro_join_slot& next = j.slots[s.index + 1];
      if (j.home == nullptr) {
        next.owed = owed + 1;
        return {next.handle, nullptr, 0};
      }
      if (worker* const self = tls.self; self == j.home && take_back(j, *self, next)) {
        // Ours now: no thief can see it. Plain store, same thread.
        next.owed = owed + 1;
        return {next.handle, nullptr, 0};
      }
    }
    // Every child carried here: all finished before us, on this thread or
    // handed on along it; nobody else touches the join.
    if (owed == count) return {j.parent, nullptr, 0};
    return {nullptr, &j, owed};
  }

  // Pops self's deque until `next` comes back (true) or the deque is empty
  // (false: a thief took it). Jobs on top of it, which this child pushed and
  // left (a spawn), run here first, as join's take_back() runs them: out of
  // line, so that the common case (next on top) stays small.
  [[gnu::always_inline]] static bool take_back(const coro_join_link& j, worker& self,
                                               coro_join_slot& next) noexcept {
    job* const top = self.deque.pop_expecting_private();
    if (top == &next) [[likely]]
      return true;
    return take_back_slow(*j.root->owner, self, next, top);
  }
  [[gnu::noinline]] static bool take_back_slow(pool& p, worker& self, coro_join_slot& next,
                                               job* top) noexcept {
    for (; top != nullptr; top = self.deque.pop()) {
      if (top == &next) return true;
      worker::bump(self.counts.jobs);
      local::execute(p, top);
    }
    return false;
  }

  coro_root* root_ = nullptr;
  std::coroutine_handle<> continuation_;
  coro_join_slot* slot_ = nullptr;  // a join's child
  void (*done_)(void*) noexcept = nullptr;
  void* done_arg_ = nullptr;
  // Where the result goes, in whatever waits (coro_result): set before the
  // coroutine first runs, by its awaiter, its join or its start.
  coro_result_base* result_ = nullptr;
};

// The value side: return_value() / return_void(), into the waiter's
// coro_result.
template <class T>
class coro_value : public coro_promise_base {
 public:
  template <class U = T>
  requires std::is_convertible_v<U&&, T>
  void return_value(U&& v) {
    static_cast<coro_result<T>*>(this->result_)->value.emplace(std::forward<U>(v));
  }
};
template <>
class coro_value<void> : public coro_promise_base {
 public:
  void return_void() noexcept {}
};

template <class T>
class coro_promise final : public coro_value<T> {
 public:
  coro<T> get_return_object() noexcept;
};

}  // namespace detail

/// A lazy coroutine task: a function that uses co_await or co_return and
/// returns weft::coro<T> runs nothing until it is awaited by another coro,
/// joined (weft::join of coros), or started on a pool (weft::submit,
/// weft::spawn, weft::sync_wait: weft/coro.hpp). T is void or a value type
/// (not a reference). Move-only; destroying a coro that has not been
/// started frees its frame. Inside a coro, `co_await` takes another
/// coro<U>, a weft::future<U>, a weft::flow_task, weft::join(coros...) and
/// weft::sleep_for / sleep_until (docs/coroutines.md).
template <class T>
class coro {
  static_assert(!std::is_reference_v<T>,
                "weft::coro<T>: T must be void or a value type; return a pointer or a "
                "std::reference_wrapper instead of a reference");

 public:
  /// The coroutine's promise (the C++ coroutine machinery's hook).
  using promise_type = detail::coro_promise<T>;

  /// An empty coro (valid() is false).
  coro() noexcept = default;
  /// Takes other's coroutine; other is left empty.
  coro(coro&& other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
  /// Destroys this coro's coroutine (if it has one) and takes other's.
  coro& operator=(coro&& other) noexcept {
    if (this != &other) {
      reset();
      h_ = std::exchange(other.h_, nullptr);
    }
    return *this;
  }
  coro(const coro&) = delete;
  coro& operator=(const coro&) = delete;
  /// Frees the coroutine's frame (and, through its locals, its children's).
  ~coro() { reset(); }

  /// Whether this coro holds a coroutine that has not been started.
  // Starting one (an await, a join, a start) takes its handle: a coro never
  // holds a finished coroutine.
  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(h_); }

  /// `co_await c` in another coro runs c on the same thread, then resumes
  /// the awaiting coro with c's result (or c's exception). Throws
  /// usage_error for an empty or finished coro.
  auto operator co_await() && {
    if (!valid()) {
      throw usage_error(
          "weft::coro: co_await of an empty or finished coro (moved from, or awaited "
          "already); await each coro once");
    }
    return detail::coro_awaiter<T>{*this, {}};
  }

 private:
  friend class detail::coro_promise<T>;
  friend struct detail::coro_access;
  explicit coro(std::coroutine_handle<promise_type> h) noexcept : h_(h) {}
  void reset() noexcept {
    if (h_) std::exchange(h_, nullptr).destroy();
  }

  std::coroutine_handle<promise_type> h_;
};

namespace detail {

template <class T>
coro<T> coro_promise<T>::get_return_object() noexcept {
  return coro<T>(std::coroutine_handle<coro_promise>::from_promise(*this));
}

// What the front ends (start, join) do with a coro's handle.
struct coro_access {
  template <class T>
  static std::coroutine_handle<coro_promise<T>> handle(const coro<T>& c) noexcept {
    return c.h_;
  }
  template <class T>
  static std::coroutine_handle<coro_promise<T>> release(coro<T>& c) noexcept {
    return std::exchange(c.h_, nullptr);
  }
};

// `co_await c` of a coro<T>: c runs on the awaiting thread (symmetric
// transfer), and its result lands here. Takes c's coroutine when it starts
// it: from then on the frame frees itself (or, finished suspended, this
// awaiter's result frees it).
template <class T>
struct coro_awaiter {
  coro<T>& c;
  coro_result<T> result;
  [[nodiscard]] bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> parent) noexcept {
    static_assert(std::is_base_of_v<coro_promise_base, P>,
                  "weft::coro can be awaited only from a weft::coro");
    const std::coroutine_handle<coro_promise<T>> child = coro_access::release(c);
    coro_promise<T>& pr = child.promise();
    pr.continuation_ = parent;
    pr.root_ = parent.promise().root_;
    pr.result_ = &result;
    return child;  // symmetric transfer: the stack does not grow
  }
  T await_resume() { return result.take(); }
};

}  // namespace detail
}  // namespace weft
