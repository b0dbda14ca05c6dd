// Tiled Cholesky: StarPU with 2 CPU workers (common/starpu_session.hpp).
// One data handle per tile (starpu_matrix_data_register, in main memory),
// one codelet per kernel with STARPU_R for the tiles it reads and STARPU_RW
// for the one it writes (cholesky/starpu_tiles.hpp); the tasks are submitted
// in program order with starpu_task_insert, StarPU infers the dependencies
// from the access modes (sequential consistency), and the caller waits with
// starpu_task_wait_for_all. The handles are then unregistered, which leaves
// the factor in the matrix for the check. Registration and unregistration
// are in the timed region: they are part of using StarPU for this.
// Variants: the scheduling policy, lws (locality work stealing) and eager
// (one central queue); dm* and other model-based policies would need
// calibration runs. BLAS on one thread.
#include <memory>

#include "cholesky/starpu_tiles.hpp"
#include "common/starpu_session.hpp"

namespace {

using bench::cholesky::tiled_matrix;

// Returns starpu_task_insert's first error, 0 if none.
int factorise(tiled_matrix& m) {
  const bench::cholesky::starpu::tile_handles handles(m);
  const int error = bench::cholesky::starpu::submit(
      m.nt(), handles,
      [](starpu_codelet* cl, auto... args) { return starpu_task_insert(cl, args..., 0); });
  starpu_task_wait_for_all();
  return error;  // the handles' destructor unregisters them
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
