// Distributed tiled Cholesky: weft::mpi::flow on every rank, each with a
// pool of workers_per_rank() workers (1 with 2 ranks). Every rank registers
// the lower tiles with their owners (cholesky_mpi::owner, the harness's
// 2D block-cyclic grid) as (pointer, size) views of their doubles, emplaces
// the whole program in order with the tiles each kernel reads and writes,
// and waits with flow::wait (collective). The flow runs each task on the
// owner of the tile it writes and sends the tiles it reads from elsewhere,
// once per version. The flow is made per factorisation (its communicator is
// duplicated and its tiles registered in the timed region, as StarPU-MPI's
// handles are). BLAS on one thread.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <stdexcept>
#include <thread>
#include <weft/mpi.hpp>

#include "cholesky/weft_tasks.hpp"
#include "cholesky_mpi/cholesky_mpi.hpp"
#include "cholesky_mpi/held_message.hpp"

namespace {

using bench::cholesky::tile;
using bench::cholesky::tiled_matrix;

void factorise(weft::pool& pool, tiled_matrix& m) {
  const int b = m.b();
  const int nt = m.nt();
  const int ranks = bench::mpi::ranks();
  const std::size_t bytes =
      static_cast<std::size_t>(b) * static_cast<std::size_t>(b) * sizeof(double);
  weft::mpi::flow f{pool, MPI_COMM_WORLD};
  for (int i = 0; i < nt; ++i) {
    for (int j = 0; j <= i; ++j) {
      tile& t = m.at(i, j);
      f.register_data(t, bench::cholesky_mpi::owner(i, j, ranks), t.data(), bytes);
    }
  }
  bench::cholesky::emplace_tasks(f, m);
  f.wait();
}

// The same factorisation with each tile registered as a view that the flow
// asks for at a rank's first transfer, a release, and the copies of panel k
// dropped once step k is emplaced (drop_copies): the path that lets a rank
// allocate a received tile only when it arrives and free it after its last
// reader. The harness's matrix is allocated in full, so here the view shows
// the tile in place and the release only counts; copies_peak reports the
// most received copies a rank held at once.
bench::cholesky_mpi::outcome factorise_views(weft::pool& pool, tiled_matrix& m) {
  const int b = m.b();
  const int nt = m.nt();
  const int ranks = bench::mpi::ranks();
  const int me = bench::mpi::rank();
  const std::size_t bytes =
      static_cast<std::size_t>(b) * static_cast<std::size_t>(b) * sizeof(double);
  std::atomic<int> held{0};
  std::atomic<int> peak{0};
  {
    weft::mpi::flow f{pool, MPI_COMM_WORLD};
    for (int i = 0; i < nt; ++i) {
      for (int j = 0; j <= i; ++j) {
        const int owner = bench::cholesky_mpi::owner(i, j, ranks);
        f.register_data(
            m.at(i, j), owner, bytes,
            [&, owner](tile& t) {
              if (owner != me) {
                const int now = held.fetch_add(1, std::memory_order_relaxed) + 1;
                int seen = peak.load(std::memory_order_relaxed);
                while (now > seen &&
                       !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
                }
              }
              return std::as_writable_bytes(std::span{t.data(), bytes / sizeof(double)});
            },
            [&](tile&) { held.fetch_sub(1, std::memory_order_relaxed); });
      }
    }
    bench::cholesky::emplace_tasks(f, m, [&](int k) {
      for (int i = k; i < nt; ++i) f.drop_copies(m.at(i, k));
    });
    f.wait();
  }
  return {0, peak.load()};
}

auto setup(int /*b*/) {
  bench::cholesky::set_blas_threads(1);
  auto pool =
      std::make_unique<weft::pool>(weft::pool_options{.threads = bench::mpi::workers_per_rank()});
  return [pool = std::move(pool)](tiled_matrix& m) { factorise(*pool, m); };
}

// mpi_idle/held_200ms/flow: rank 0 waits for an object rank 1 writes after
// a sleep. Needs two ranks; on one, both tasks are local.
struct cell {
  double v[4];
};

// The pool, the flow and its polling thread live for the whole benchmark
// run, so that the CPU clocks read (live threads') cover them.
struct held_program {
  weft::pool pool{weft::pool_options{.threads = bench::mpi::workers_per_rank()}};
  cell held{};
  cell out{};
  weft::mpi::flow f{pool, MPI_COMM_WORLD};
  held_program() {
    f.register_data(held, bench::mpi::ranks() - 1);
    f.register_data(out, 0);
  }
  void run(std::chrono::milliseconds hold) {
    f.emplace(
        [hold](cell& h) {
          std::this_thread::sleep_for(hold);
          h.v[0] += 1;
        },
        weft::write(held));
    f.emplace([](const cell& h, cell& o) { o.v[0] = h.v[0]; }, weft::read(held), weft::write(out));
    f.wait();
    if (bench::mpi::rank() == 0 && out.v[0] != held_count + 1) {
      throw std::runtime_error("mpi_idle: rank 0 read a wrong version");
    }
    ++held_count;
  }
  double held_count = 0;
};

auto setup_held() {
  auto program = std::make_shared<held_program>();
  return [program](std::chrono::milliseconds hold) { program->run(hold); };
}

auto setup_views(int /*b*/) {
  bench::cholesky::set_blas_threads(1);
  auto pool =
      std::make_unique<weft::pool>(weft::pool_options{.threads = bench::mpi::workers_per_rank()});
  return [pool = std::move(pool)](tiled_matrix& m) { return factorise_views(*pool, m); };
}

const int timing = bench::on_startup(bench::suite::timing, [] {
  bench::cholesky_mpi::add("flow", setup);
  bench::cholesky_mpi::add("flow_views", setup_views);
  bench::held_message::add("flow", setup_held);
});

}  // namespace
