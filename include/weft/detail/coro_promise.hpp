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

// The hand-over from a join's child to its next sibling is a symmetric
// transfer, a tail call only where the compiler makes it one (GCC at -O2,
// Clang; not GCC at -O0/-O1, nor under the sanitizers, whose hooks keep
// the caller's frame). Without it every hand-over nests a native frame, and
// a fork-join tree with nothing stolen would run as one chain of them. So a
// child hands over only while the stack has grown less than
// coro_handover_stack since the job that runs it began (coro_stack_scope,
// set by every job that resumes a coroutine); past that it takes the
// counted path and returns to the worker's loop, which unwinds the stack
// and runs the sibling from the deque. With tail calls the stack does not
// grow, and the check always passes.
inline constexpr std::ptrdiff_t coro_handover_stack = std::ptrdiff_t{64} * 1024;
// Where the innermost job that resumes coroutines began, on this thread's
// stack; null outside one. Constant-initialised: no TLS guard.
inline constinit thread_local const char* coro_stack_base = nullptr;

[[gnu::always_inline]] inline const char* coro_stack_here() noexcept {
#if defined(__GNUC__) || defined(__clang__)
  return static_cast<const char*>(__builtin_frame_address(0));
#else
  return nullptr;  // unknown: no limit
#endif
}

// Marks the stack where a job that resumes a coroutine begins.
class coro_stack_scope {
 public:
  coro_stack_scope() noexcept : outer_(coro_stack_base) { coro_stack_base = coro_stack_here(); }
  coro_stack_scope(const coro_stack_scope&) = delete;
  coro_stack_scope& operator=(const coro_stack_scope&) = delete;
  ~coro_stack_scope() { coro_stack_base = outer_; }

  // Whether a hand-over may nest one more frame here (stacks grow down on
  // every platform weft runs on).
  [[nodiscard]] static bool room() noexcept {
    const char* const base = coro_stack_base;
    const char* const here = coro_stack_here();
    return base == nullptr || here == nullptr || base - here < coro_handover_stack;
  }

 private:
  const char* outer_;
};

// Runs a job that resumes coroutine h of start r, on this thread: the job's
// running_scope (the pool and epoch parity its spawns count in), the mark
// of where its stack begins (coro_stack_scope), and, in a traced pool, a
// slice named `label`. The coroutine may free the job as soon as it
// resumes: only copies are used.
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
    h.resume();
  }
};

inline void coro_run(const coro_root& r, std::coroutine_handle<> h, const char* label) noexcept {
  const running_scope running{r.owner, r.epoch};
  const coro_stack_scope stack;
  // A traced pool's job (pool::execute set the thread's ring): one
  // predictable branch otherwise.
  if (current_trace != nullptr) [[unlikely]] {
    coro_resume::traced_resume(h, label);
    return;
  }
  h.resume();
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
template <class... Ts>
struct coro_join_args;
template <class... Ts>
class coro_join_awaiter;

// What a promise knows whatever its value type.
class coro_promise_base {
 public:
  // Frames from the thread's frame cache (coro_frame.hpp).
  static void* operator new(std::size_t n) { return coro_frames::allocate(n); }
  static void operator delete(void* p, std::size_t n) noexcept { coro_frames::release(p, n); }

  // Lazy: nothing runs until the coroutine is awaited, joined or started.
  std::suspend_always initial_suspend() noexcept { return {}; }

  // Symmetric transfer to whoever waits: the awaiting coroutine, the join's
  // parent when this is its last child to finish, or nobody (a start's
  // root, which completes its future here).
  struct final_awaiter {
    [[nodiscard]] bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      return h.promise().finished();
    }
    void await_resume() const noexcept {}
  };
  final_awaiter final_suspend() noexcept { return {}; }
  void unhandled_exception() noexcept { error_ = std::current_exception(); }

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

  [[nodiscard]] std::coroutine_handle<> finished() noexcept {
    if (continuation_) return continuation_;
    if (slot_ != nullptr) return finish_child(*slot_);
    // A start's root: completes its future, and frees this frame.
    void (*const done)(void*) noexcept = done_;
    done(done_arg_);
    return std::noop_coroutine();
  }

  // A join's child has finished (docs/coroutines.md, "Join: what is
  // stolen"). If the next child is still on this worker's deque (its top,
  // unless a thief took it) and the stack has room for a hand-over
  // (coro_stack_scope), this one takes it back and hands on to it:
  // nothing was stolen, so nothing needs an atomic, and the next one carries
  // this one's completion (owed). A child that finds its next sibling gone,
  // or that is the last, accounts for what it carries in `pending`; the one
  // that brings it to zero resumes the parent. A child that carries every
  // child's completion (owed == count: the children ran one after the other,
  // each handed on to by the one before) resumes the parent with no atomic
  // at all.
  [[nodiscard]] static std::coroutine_handle<> finish_child(coro_join_slot& s) noexcept {
    coro_join_link& j = *s.link;
    const std::size_t owed = s.owed;
    const std::size_t count = j.count;
    if (s.index + 1 < count) {
      coro_join_slot& next = j.slots[s.index + 1];
      if (j.home == nullptr) {
        // Chained: the parent waits for this transfer, so next is alive.
        // Without room on the stack, next goes to the pool's queue (a
        // sequential pool's thread runs it once this job has unwound, in
        // the same order) and this child takes the counted path; only if
        // no queue takes it does the chain nest one more frame.
        job* queued = &next;
        if (coro_stack_scope::room() || scheduler::publish(*j.root->owner, &queued, 1) == 0) {
          next.owed = owed + 1;
          return next.handle;
        }
      } else if (worker* const self = tls.self; self == j.home && coro_stack_scope::room()) {
        if (take_back(j, *self, next)) {
          // Ours now: no thief can see it. Plain store, same thread.
          next.owed = owed + 1;
          return next.handle;
        }
      }
    }
    // Every child carried here: all finished before us, on this thread or
    // handed on along it; nobody else touches the join.
    if (owed == count) return j.parent;
    // Read before the decrement: once it is done, the last child may
    // resume the parent on another thread, and the parent may end the join
    // (and reuse its memory for the next one) while we still run. Only the
    // last one, whom the parent waits for, reads j after it.
    // acq_rel: release publishes the results of this child and of those it
    // carries to whoever brings the count to zero; acquire, in that one,
    // sees every other child's (the decrements form one release sequence).
    // It then resumes the parent, which reads all results.
    if (j.pending.fetch_sub(owed, std::memory_order_acq_rel) == owed) return j.parent;
    return std::noop_coroutine();
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
  std::exception_ptr error_;
};

// The value side: return_value() / return_void() and the result's storage.
template <class T>
class coro_value : public coro_promise_base {
 public:
  template <class U = T>
  requires std::is_convertible_v<U&&, T>
  void return_value(U&& v) { value_.emplace(std::forward<U>(v)); }

  // The result, or the exception rethrown (an awaiter, once it finished).
  T take() {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    // Engaged unless the body threw. NOLINTNEXTLINE(bugprone-unchecked-optional-access)
    return std::move(*value_);
  }
  std::optional<T> value_;
};
template <>
class coro_value<void> : public coro_promise_base {
 public:
  void return_void() noexcept {}
  void take() {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }
};

template <class T>
class coro_promise final : public coro_value<T> {
 public:
  coro<T> get_return_object() noexcept;
};

struct coro_access;

// `co_await c` of a coro<T>: c runs on the awaiting thread, by symmetric
// transfer both ways.
template <class T>
struct coro_awaiter {
  std::coroutine_handle<coro_promise<T>> child;
  [[nodiscard]] bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> parent) noexcept {
    static_assert(std::is_base_of_v<coro_promise_base, P>,
                  "weft::coro can be awaited only from a weft::coro");
    coro_promise<T>& c = child.promise();
    c.continuation_ = parent;
    c.root_ = parent.promise().root_;
    return child;  // symmetric transfer: the stack does not grow
  }
  T await_resume() { return child.promise().take(); }
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
  [[nodiscard]] bool valid() const noexcept { return h_ && !h_.done(); }

  /// `co_await c` in another coro runs c on the same thread, then resumes
  /// the awaiting coro with c's result (or c's exception). Throws
  /// usage_error for an empty or finished coro.
  auto operator co_await() && {
    if (!valid()) {
      throw usage_error(
          "weft::coro: co_await of an empty or finished coro (moved from, or awaited "
          "already); await each coro once");
    }
    return detail::coro_awaiter<T>{h_};
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

}  // namespace detail
}  // namespace weft
