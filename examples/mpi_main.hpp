// The main() of the examples across MPI ranks: MPI at the thread level
// weft::mpi needs, run() on every rank, and an exit status that fails the
// run (on every rank) if any rank's run() failed or threw.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <exception>

namespace example {

// run() returns 0 on success; `name` prefixes the message of an exception.
template <class Run>
int mpi_main(int argc, char** argv, const char* name, Run run) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int status = 1;
  try {
    status = run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
  }
  int worst = status;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}

}  // namespace example
