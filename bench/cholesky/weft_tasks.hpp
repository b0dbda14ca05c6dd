// The tiled Cholesky program as weft data-flow tasks, for any flow with
// emplace(f, weft::read/write...): weft::flow (cholesky/weft.cpp) and
// weft::mpi::flow (cholesky_mpi/weft_mpi.cpp). One task per kernel in
// program order, declaring the tiles it reads and the one it writes. Where
// emplace returns a task handle (weft::flow), the task is named after its
// kernel, which shows in a trace of the run (on an untraced pool, name() is
// a call that returns at once).
#pragma once

#include <type_traits>
#include <utility>
#include <weft/flow.hpp>

#include "cholesky/cholesky.hpp"

namespace bench::cholesky {

template <class Flow, class F, class... A>
void emplace_named(Flow& f, const char* name, F&& fn, A&&... accesses) {
  if constexpr (std::is_void_v<decltype(f.emplace(std::forward<F>(fn),
                                                  std::forward<A>(accesses)...))>) {
    f.emplace(std::forward<F>(fn), std::forward<A>(accesses)...);
  } else {
    f.emplace(std::forward<F>(fn), std::forward<A>(accesses)...).name(name);
  }
}

// after_step(k) is called once step k's tasks are emplaced: nothing after
// them reads panel k (cholesky_mpi/weft_mpi.cpp drops its copies there).
template <class Flow, class AfterStep>
void emplace_tasks(Flow& f, tiled_matrix& m, AfterStep after_step) {
  const int b = m.b();
  for_each_task(m.nt(), [&](const task& t) {
    switch (t.kind) {
      case kernel::potrf:
        if (t.k > 0) after_step(t.k - 1);
        emplace_named(
            f, "potrf", [b](tile& akk) { potrf(akk.data(), b); }, weft::write(m.at(t.k, t.k)));
        break;
      case kernel::trsm:
        emplace_named(
            f, "trsm", [b](const tile& akk, tile& aik) { trsm(akk.data(), aik.data(), b); },
            weft::read(m.at(t.k, t.k)), weft::write(m.at(t.i, t.k)));
        break;
      case kernel::syrk:
        emplace_named(
            f, "syrk", [b](const tile& aik, tile& aii) { syrk(aik.data(), aii.data(), b); },
            weft::read(m.at(t.i, t.k)), weft::write(m.at(t.i, t.i)));
        break;
      case kernel::gemm:
        emplace_named(
            f, "gemm",
            [b](const tile& aik, const tile& ajk, tile& aij) {
              gemm(aik.data(), ajk.data(), aij.data(), b);
            },
            weft::read(m.at(t.i, t.k)), weft::read(m.at(t.j, t.k)), weft::write(m.at(t.i, t.j)));
        break;
    }
  });
  if (m.nt() > 0) after_step(m.nt() - 1);
}

template <class Flow>
void emplace_tasks(Flow& f, tiled_matrix& m) {
  emplace_tasks(f, m, [](int) {});
}

}  // namespace bench::cholesky
