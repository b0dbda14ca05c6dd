// Tiled Cholesky in StarPU's terms, shared by cholesky/starpu.cpp (StarPU
// in one process) and cholesky_mpi/starpu_mpi.cpp (StarPU-MPI): a codelet
// per kernel, with STARPU_R for the tiles it reads and STARPU_RW for the
// one it writes; a matrix handle per tile, in main memory on the tile's own
// storage; and the submission of every task in program order, from which
// StarPU infers the dependencies (sequential consistency).
#pragma once

#include <starpu.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cholesky/cholesky.hpp"

namespace bench::cholesky::starpu {

inline double* tile_of(void* buffer) {
  return reinterpret_cast<double*>(STARPU_MATRIX_GET_PTR(buffer));
}
inline int order_of(void* buffer) { return static_cast<int>(STARPU_MATRIX_GET_NX(buffer)); }

inline void potrf_cpu(void* buffers[], void* /*arg*/) {
  potrf(tile_of(buffers[0]), order_of(buffers[0]));
}
inline void trsm_cpu(void* buffers[], void* /*arg*/) {
  trsm(tile_of(buffers[0]), tile_of(buffers[1]), order_of(buffers[0]));
}
inline void syrk_cpu(void* buffers[], void* /*arg*/) {
  syrk(tile_of(buffers[0]), tile_of(buffers[1]), order_of(buffers[0]));
}
inline void gemm_cpu(void* buffers[], void* /*arg*/) {
  gemm(tile_of(buffers[0]), tile_of(buffers[1]), tile_of(buffers[2]), order_of(buffers[0]));
}

inline starpu_codelet make_codelet(starpu_cpu_func_t f, const char* name, int reads) {
  starpu_codelet cl;
  starpu_codelet_init(&cl);
  cl.cpu_funcs[0] = f;
  cl.name = name;
  cl.nbuffers = reads + 1;
  for (int r = 0; r < reads; ++r) cl.modes[r] = STARPU_R;
  cl.modes[reads] = STARPU_RW;
  return cl;
}

inline starpu_codelet potrf_cl = make_codelet(potrf_cpu, "potrf", 0);
inline starpu_codelet trsm_cl = make_codelet(trsm_cpu, "trsm", 1);
inline starpu_codelet syrk_cl = make_codelet(syrk_cpu, "syrk", 1);
inline starpu_codelet gemm_cl = make_codelet(gemm_cpu, "gemm", 2);

// A matrix handle per tile of m (the lower triangle), registered on
// construction and unregistered on destruction, which leaves the tiles'
// latest data in m.
class tile_handles {
 public:
  explicit tile_handles(tiled_matrix& m)
      : nt_(m.nt()),
        handles_(static_cast<std::size_t>(nt_) * static_cast<std::size_t>(nt_), nullptr) {
    const auto b = static_cast<std::uint32_t>(m.b());
    for_each([&m, b](int i, int j, starpu_data_handle_t& h) {
      starpu_matrix_data_register(&h, STARPU_MAIN_RAM,
                                  reinterpret_cast<std::uintptr_t>(m.at(i, j).data()), b, b, b,
                                  sizeof(double));
    });
  }
  ~tile_handles() {
    for_each([](int, int, starpu_data_handle_t& h) { starpu_data_unregister(h); });
  }
  tile_handles(const tile_handles&) = delete;
  tile_handles& operator=(const tile_handles&) = delete;

  // Tile (i, j)'s handle, i >= j.
  starpu_data_handle_t operator()(int i, int j) const {
    return handles_[static_cast<std::size_t>(j) * static_cast<std::size_t>(nt_) +
                    static_cast<std::size_t>(i)];
  }

  // f(i, j, handle) for every tile, column by column.
  template <class F>
  void for_each(F&& f) {
    for (int j = 0; j < nt_; ++j) {
      for (int i = j; i < nt_; ++i) {
        f(i, j,
          handles_[static_cast<std::size_t>(j) * static_cast<std::size_t>(nt_) +
                   static_cast<std::size_t>(i)]);
      }
    }
  }

 private:
  int nt_;
  std::vector<starpu_data_handle_t> handles_;
};

// Submits every task of the factorisation in program order with
// insert(&codelet, STARPU_R, tile read, ..., STARPU_RW, tile written), which
// ends the list with 0: starpu_task_insert, or starpu_mpi_task_insert on a
// communicator. Returns the first non-zero result of insert, 0 if none.
template <class Insert>
int submit(int nt, const tile_handles& h, Insert insert) {
  int error = 0;
  for_each_task(nt, [&](const task& t) {
    int ret = 0;
    switch (t.kind) {
      case kernel::potrf:
        ret = insert(&potrf_cl, STARPU_RW, h(t.k, t.k));
        break;
      case kernel::trsm:
        ret = insert(&trsm_cl, STARPU_R, h(t.k, t.k), STARPU_RW, h(t.i, t.k));
        break;
      case kernel::syrk:
        ret = insert(&syrk_cl, STARPU_R, h(t.i, t.k), STARPU_RW, h(t.i, t.i));
        break;
      case kernel::gemm:
        ret =
            insert(&gemm_cl, STARPU_R, h(t.i, t.k), STARPU_R, h(t.j, t.k), STARPU_RW, h(t.i, t.j));
        break;
    }
    if (ret != 0 && error == 0) error = ret;
  });
  return error;
}

}  // namespace bench::cholesky::starpu
