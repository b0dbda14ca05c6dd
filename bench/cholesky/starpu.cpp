// Tiled Cholesky: StarPU with 2 CPU workers (common/starpu_session.hpp).
// One data handle per tile (starpu_matrix_data_register, in main memory),
// one codelet per kernel with STARPU_R for the tiles it reads and STARPU_RW
// for the one it writes; the tasks are submitted in program order with
// starpu_task_insert, StarPU infers the dependencies from the access modes
// (sequential consistency), and the caller waits with
// starpu_task_wait_for_all. The handles are then unregistered, which leaves
// the factor in the matrix for the check. Registration and unregistration
// are in the timed region: they are part of using StarPU for this.
// Variants: the scheduling policy, lws (locality work stealing) and eager
// (one central queue); dm* and other model-based policies would need
// calibration runs. BLAS on one thread.
#include <memory>
#include <vector>

#include "cholesky/cholesky.hpp"
#include "common/starpu_session.hpp"

namespace {

using bench::cholesky::tiled_matrix;

double* tile_of(void* buffer) { return reinterpret_cast<double*>(STARPU_MATRIX_GET_PTR(buffer)); }
int order_of(void* buffer) { return static_cast<int>(STARPU_MATRIX_GET_NX(buffer)); }

void potrf_cpu(void* buffers[], void* /*arg*/) {
  bench::cholesky::potrf(tile_of(buffers[0]), order_of(buffers[0]));
}
void trsm_cpu(void* buffers[], void* /*arg*/) {
  bench::cholesky::trsm(tile_of(buffers[0]), tile_of(buffers[1]), order_of(buffers[0]));
}
void syrk_cpu(void* buffers[], void* /*arg*/) {
  bench::cholesky::syrk(tile_of(buffers[0]), tile_of(buffers[1]), order_of(buffers[0]));
}
void gemm_cpu(void* buffers[], void* /*arg*/) {
  bench::cholesky::gemm(tile_of(buffers[0]), tile_of(buffers[1]), tile_of(buffers[2]),
                        order_of(buffers[0]));
}

starpu_codelet make_codelet(starpu_cpu_func_t f, const char* name, int reads) {
  starpu_codelet cl;
  starpu_codelet_init(&cl);
  cl.cpu_funcs[0] = f;
  cl.name = name;
  cl.nbuffers = reads + 1;
  for (int r = 0; r < reads; ++r) cl.modes[r] = STARPU_R;
  cl.modes[reads] = STARPU_RW;
  return cl;
}

starpu_codelet potrf_cl = make_codelet(potrf_cpu, "potrf", 0);
starpu_codelet trsm_cl = make_codelet(trsm_cpu, "trsm", 1);
starpu_codelet syrk_cl = make_codelet(syrk_cpu, "syrk", 1);
starpu_codelet gemm_cl = make_codelet(gemm_cpu, "gemm", 2);

// Returns starpu_task_insert's first error, 0 if none.
int factorise(tiled_matrix& m) {
  const int nt = m.nt();
  const auto b = static_cast<std::uint32_t>(m.b());
  std::vector<starpu_data_handle_t> handles(static_cast<std::size_t>(nt) *
                                            static_cast<std::size_t>(nt));
  auto handle = [&handles, nt](int i, int j) -> starpu_data_handle_t& {
    return handles[static_cast<std::size_t>(j) * static_cast<std::size_t>(nt) +
                   static_cast<std::size_t>(i)];
  };
  for (int j = 0; j < nt; ++j) {
    for (int i = j; i < nt; ++i) {
      starpu_matrix_data_register(&handle(i, j), STARPU_MAIN_RAM,
                                  reinterpret_cast<std::uintptr_t>(m.at(i, j).data()), b, b, b,
                                  sizeof(double));
    }
  }

  int error = 0;
  bench::cholesky::for_each_task(nt, [&](const bench::cholesky::task& t) {
    int ret = 0;
    switch (t.kind) {
      case bench::cholesky::kernel::potrf:
        ret = starpu_task_insert(&potrf_cl, STARPU_RW, handle(t.k, t.k), 0);
        break;
      case bench::cholesky::kernel::trsm:
        ret = starpu_task_insert(&trsm_cl, STARPU_R, handle(t.k, t.k), STARPU_RW, handle(t.i, t.k),
                                 0);
        break;
      case bench::cholesky::kernel::syrk:
        ret = starpu_task_insert(&syrk_cl, STARPU_R, handle(t.i, t.k), STARPU_RW, handle(t.i, t.i),
                                 0);
        break;
      case bench::cholesky::kernel::gemm:
        ret = starpu_task_insert(&gemm_cl, STARPU_R, handle(t.i, t.k), STARPU_R, handle(t.j, t.k),
                                 STARPU_RW, handle(t.i, t.j), 0);
        break;
    }
    if (ret != 0 && error == 0) error = ret;
  });
  starpu_task_wait_for_all();

  for (int j = 0; j < nt; ++j) {
    for (int i = j; i < nt; ++i) starpu_data_unregister(handle(i, j));
  }
  return error;
}

// The session lives as long as the benchmark run; a failed starpu_init
// makes every factorisation report its error code.
auto setup(int /*b*/, const char* scheduler) {
  bench::cholesky::set_blas_threads(1);
  auto session = std::make_shared<bench::starpu_session>(bench::workers, scheduler);
  return [session](tiled_matrix& m) { return session->ok() ? factorise(m) : session->status(); };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::cholesky::add("task_insert_lws", [](int b) { return setup(b, "lws"); });
  bench::cholesky::add("task_insert_eager", [](int b) { return setup(b, "eager"); });
});

}  // namespace
