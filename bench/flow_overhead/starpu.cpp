// Per-task costs of StarPU (flow_overhead.hpp), lws scheduler, `workers`
// CPU workers (common/starpu_session.hpp); the caller is not a worker. A
// resource is a variable handle (starpu_variable_data_register on its
// value), registered the first time a task uses it and unregistered when
// the benchmark run ends; every access is STARPU_RW, passed with
// STARPU_DATA_MODE_ARRAY to one codelet with STARPU_VARIABLE_NBUFFERS.
// The task's body is a copy of the benchmark's closure handed over with
// STARPU_CL_ARGS (StarPU frees it after the task). The caller waits with
// starpu_task_wait_for_all. With CPU workers only, main memory holds the
// one copy of each resource and tasks update it in place, so the checks
// read the values after the wait.
#include <cstdlib>
#include <new>
#include <thread>
#include <type_traits>
#include <unordered_map>

#include "common/starpu_session.hpp"
#include "flow_overhead/flow_overhead.hpp"

namespace {

using bench::flow_overhead::clock;
using bench::flow_overhead::resource;

class starpu_library {
 public:
  starpu_library(int workers, std::size_t /*max_unfinished*/)
      : workers_(workers), session_(workers, "lws") {}

  ~starpu_library() {
    if (!session_.ok()) return;
    starpu_task_wait_for_all();
    for (auto& [r, h] : handles_) starpu_data_unregister(h);
  }

  starpu_library(const starpu_library&) = delete;
  starpu_library& operator=(const starpu_library&) = delete;

  int status() const { return session_.status(); }
  int workers() const { return workers_; }
  int helpers() const { return workers_; }
  static constexpr bool deferred = false;

  template <class F>
  void run(F&& f) {
    f();
  }

  template <class F>
  void emplace(const F& body, resource* const* r, int n) {
    starpu_data_descr descr[bench::flow_overhead::max_accesses];
    for (int k = 0; k < n; ++k) {
      descr[k].handle = handle_of(r[k]);
      descr[k].mode = STARPU_RW;
    }
    submit(body, descr, n);
  }

  template <class F>
  void emplace_free(const F& body) {
    submit(body, nullptr, 0);
  }

  void wait() { starpu_task_wait_for_all(); }

 private:
  starpu_data_handle_t handle_of(resource* r) {
    const auto [it, inserted] = handles_.try_emplace(r, nullptr);
    if (inserted) {
      starpu_variable_data_register(&it->second, STARPU_MAIN_RAM,
                                    reinterpret_cast<std::uintptr_t>(&r->value), sizeof r->value);
    }
    return it->second;
  }

  template <class F>
  static void call(void** /*buffers*/, void* arg) {
    (*static_cast<F*>(arg))();
  }

  template <class F>
  static starpu_codelet* codelet() {
    static starpu_codelet cl = [] {
      starpu_codelet c;
      starpu_codelet_init(&c);
      c.cpu_funcs[0] = &call<F>;
      c.nbuffers = STARPU_VARIABLE_NBUFFERS;
      c.name = "flow_overhead";
      return c;
    }();
    return &cl;
  }

  template <class F>
  void submit(const F& body, starpu_data_descr* descr, int n) {
    static_assert(std::is_trivially_copyable_v<F> && std::is_trivially_destructible_v<F>,
                  "StarPU frees the closure's copy with free()");
    void* arg = std::malloc(sizeof(F));
    if (arg == nullptr) throw std::bad_alloc();
    ::new (arg) F(body);
    if (n > 0) {
      starpu_task_insert(codelet<F>(), STARPU_DATA_MODE_ARRAY, descr, n, STARPU_CL_ARGS, arg,
                         sizeof(F), 0);
    } else {
      starpu_task_insert(codelet<F>(), STARPU_CL_ARGS, arg, sizeof(F), 0);
    }
  }

  int workers_;
  bench::starpu_session session_;
  std::unordered_map<const resource*, starpu_data_handle_t> handles_;
};

void latency(benchmark::State& state, bool idle) {
  starpu_library lib(bench::workers, 0);
  if (!bench::flow_overhead::started(state, lib)) return;
  const std::thread::id caller = std::this_thread::get_id();
  auto hand_over = [&lib, caller](clock::time_point* started) {
    bool elsewhere = false;
    bool* flag = &elsewhere;
    lib.emplace_free([started, flag, caller] {
      *started = clock::now();
      *flag = std::this_thread::get_id() != caller;
    });
    lib.wait();
    return elsewhere;
  };
  bench::flow_overhead::latency(state, hand_over, idle);
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::flow_overhead::add_emplace<starpu_library>("task_insert");
  bench::flow_overhead::add_gap<starpu_library>("task_insert");
  bench::flow_overhead::add_overhead<starpu_library>("task_insert");
  bench::flow_overhead::add_latency("task_insert", latency);
});

}  // namespace
