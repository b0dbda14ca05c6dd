// Distributed tiled Cholesky (cholesky_mpi.hpp): StarPU-MPI 1.3 with
// workers_per_rank() CPU workers per rank (1 on 2 ranks), no other device.
//
// StarPU-MPI's own way, as in its examples: every rank registers a matrix
// handle per tile (cholesky/starpu_tiles.hpp; the tile's local storage as
// its home, so that a tile received from its owner lands in the local copy
// and StarPU allocates nothing) and gives each to StarPU-MPI with
// starpu_mpi_data_register(handle, tag = the tile's index, owner(i, j)).
// Every rank then submits every task in program order with
// starpu_mpi_task_insert: the rank that owns the tile a task writes runs it
// (STARPU_RW), and StarPU-MPI sends what it reads to that rank, each
// version of a tile once per rank (its communication cache, on by default).
// starpu_mpi_wait_for_all waits for the tasks and the transfers of every
// rank; the handles are then unregistered. Registration and unregistration
// are in the timed region, as in cholesky/starpu.cpp.
//
// Scheduler: lws, StarPU's default. With one worker per rank there is
// nothing to steal and lws is one local queue, as eager would be (the one
// central queue of a single worker), so a second variant would measure the
// same thing twice.
//
// StarPU-MPI's progress thread makes the MPI calls, polling without
// sleeping; with starpu_conf.ncpus given, starpu_mpi_init_conf reserves no
// core for it. STARPU_MPI_DRIVER_CALL_FREQUENCY > 0, which makes that
// thread run worker 0 between its polls instead, deadlocked in 2 runs of 3
// with StarPU 1.3.10 here, so it is set to 0. No StarPU thread is
// bound to a core (STARPU_WORKERS_NOBIND, STARPU_MPI_NOBIND): StarPU would
// otherwise bind each rank's first worker to the machine's first core, the
// same one on every rank of the node; mpirun runs with --bind-to none (see
// scripts/bench.sh), so the system places the threads, as it does those of
// weft's unpinned pool.
//
// StarPU 1.3's own count of the bytes it sends (STARPU_COMM_STATS=1, data
// only) can be printed at shutdown for comparison; the counters here are
// those of the harness (common/mpi.hpp), the same for every library.
#include <starpu_mpi.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <thread>

#include "cholesky/starpu_tiles.hpp"
#include "cholesky_mpi/cholesky_mpi.hpp"
#include "cholesky_mpi/held_message.hpp"
#include "common/starpu_session.hpp"

namespace {

using bench::cholesky::tiled_matrix;
namespace starpu = bench::cholesky::starpu;

// Returns starpu_mpi_task_insert's first error, 0 if none.
int factorise(tiled_matrix& m) {
  const int ranks = bench::mpi::ranks();
  const int nt = m.nt();
  starpu::tile_handles handles(m);
  handles.for_each([ranks, nt](int i, int j, starpu_data_handle_t& h) {
    starpu_mpi_data_register(h, static_cast<starpu_mpi_tag_t>(j) * nt + i,
                             bench::cholesky_mpi::owner(i, j, ranks));
  });
  const int error = starpu::submit(nt, handles, [](starpu_codelet* cl, auto... args) {
    return starpu_mpi_task_insert(MPI_COMM_WORLD, cl, args..., 0);
  });
  starpu_mpi_wait_for_all(MPI_COMM_WORLD);
  return error;  // the handles' destructor unregisters them
}

int start(starpu_conf* conf) {
  return starpu_mpi_init_conf(nullptr, nullptr, 0, MPI_COMM_WORLD, conf);
}
void stop() { starpu_mpi_shutdown(); }

// The session lives as long as the benchmark run. If StarPU-MPI failed to
// start on any rank, every rank's factorisations report the error instead
// of waiting for a peer that will never send.
auto setup(int /*b*/) {
  bench::cholesky::set_blas_threads(1);
  setenv("STARPU_WORKERS_NOBIND", "1", 1);
  setenv("STARPU_MPI_NOBIND", "1", 1);
  setenv("STARPU_MPI_DRIVER_CALL_FREQUENCY", "0", 1);
  auto session =
      std::make_shared<bench::starpu_session>(bench::mpi::workers_per_rank(), "lws", start, stop);
  int status = session->status();
  MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MIN, bench::mpi::harness());
  return [session, status](tiled_matrix& m) { return status == 0 ? factorise(m) : status; };
}

// mpi_idle/held_200ms/task_insert_lws (held_message.hpp): the last rank writes a
// variable after a sleep; rank 0 reads it into its own. The same two-task
// program as weft's, through StarPU-MPI's task insertion.
struct held_state {
  double held = 0;
  double out = 0;
  std::chrono::milliseconds hold{};
};

void hold_cpu(void* buffers[], void* arg) {
  const auto* h = static_cast<const held_state*>(arg);
  std::this_thread::sleep_for(h->hold);
  *reinterpret_cast<double*>(STARPU_VARIABLE_GET_PTR(buffers[0])) += 1;
}
void read_cpu(void* buffers[], void* /*arg*/) {
  *reinterpret_cast<double*>(STARPU_VARIABLE_GET_PTR(buffers[1])) =
      *reinterpret_cast<const double*>(STARPU_VARIABLE_GET_PTR(buffers[0]));
}

starpu_codelet make_held_codelet(starpu_cpu_func_t f, const char* name, int buffers) {
  starpu_codelet cl;
  starpu_codelet_init(&cl);
  cl.cpu_funcs[0] = f;
  cl.name = name;
  cl.nbuffers = buffers;
  cl.modes[0] = buffers == 1 ? STARPU_RW : STARPU_R;
  if (buffers == 2) cl.modes[1] = STARPU_RW;
  return cl;
}
starpu_codelet hold_cl = make_held_codelet(hold_cpu, "hold", 1);
starpu_codelet read_cl = make_held_codelet(read_cpu, "read", 2);

auto setup_held() {
  setenv("STARPU_WORKERS_NOBIND", "1", 1);
  setenv("STARPU_MPI_NOBIND", "1", 1);
  setenv("STARPU_MPI_DRIVER_CALL_FREQUENCY", "0", 1);
  auto session =
      std::make_shared<bench::starpu_session>(bench::mpi::workers_per_rank(), "lws", start, stop);
  auto state = std::make_shared<held_state>();
  return [session, state](std::chrono::milliseconds hold) {
    if (session->status() != 0) throw std::runtime_error("mpi_idle: StarPU-MPI did not start");
    state->hold = hold;
    const double before = state->held;
    starpu_data_handle_t held = nullptr;
    starpu_data_handle_t out = nullptr;
    starpu_variable_data_register(&held, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&state->held),
                                  sizeof(double));
    starpu_variable_data_register(&out, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&state->out),
                                  sizeof(double));
    starpu_mpi_data_register(held, 1, bench::mpi::ranks() - 1);
    starpu_mpi_data_register(out, 2, 0);
    starpu_mpi_task_insert(MPI_COMM_WORLD, &hold_cl, STARPU_RW, held, STARPU_CL_ARGS_NFREE,
                           state.get(), sizeof(held_state), 0);
    starpu_mpi_task_insert(MPI_COMM_WORLD, &read_cl, STARPU_R, held, STARPU_RW, out, 0);
    starpu_task_wait_for_all();
    starpu_mpi_wait_for_all(MPI_COMM_WORLD);
    starpu_data_unregister(held);
    starpu_data_unregister(out);
    if (bench::mpi::rank() == 0 && state->out != before + 1) {
      throw std::runtime_error("mpi_idle: rank 0 read a wrong version");
    }
    state->held = before + 1;  // every rank's copy, for the next check
  };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::cholesky_mpi::add("task_insert_lws", setup);
  bench::held_message::add("task_insert_lws", setup_held);
});

}  // namespace
