// StarPU for the weft_bench_starpu executable: one session per benchmark
// run, started with a given number of CPU workers and nothing else.
//
//   - starpu_conf: `cpus` CPU workers, no CUDA, OpenCL, MIC or MPI
//     master-slave devices, given precedence over STARPU_* variables so that
//     every run has the same workers; no calibration (no codelet here has a
//     performance model, and the schedulers used, lws and eager, need none);
//     no signal handlers of StarPU's.
//   - STARPU_SILENT=1: no banner or informational messages on stderr.
//   - STARPU_HOME: unless already set, <directory of the executable>/starpu_home
//     (build/bench/bench/starpu_home), where StarPU keeps its sampling
//     directory (bus and performance-model files), instead of $HOME/.starpu.
//
// Like weft's pool, StarPU's workers are threads of their own: the calling
// thread submits and waits, and is not one of the `cpus` workers.
#pragma once

#include <limits.h>
#include <starpu.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace bench {

class starpu_session {
 public:
  // How StarPU starts and ends: starpu_init and starpu_shutdown, or
  // StarPU-MPI's starpu_mpi_init_conf and starpu_mpi_shutdown.
  using start_function = int (*)(starpu_conf*);
  using stop_function = void (*)();

  // `scheduler`: a StarPU scheduling policy name ("lws", "eager", ...).
  starpu_session(int cpus, const char* scheduler, start_function start = starpu_init,
                 stop_function stop = starpu_shutdown)
      : stop_(stop) {
    prepare_environment();
    starpu_conf conf;
    starpu_conf_init(&conf);
    conf.precedence_over_environment_variables = 1;
    conf.sched_policy_name = scheduler;
    conf.ncpus = cpus;
    conf.ncuda = 0;
    conf.nopencl = 0;
    conf.nmic = 0;
    conf.nmpi_ms = 0;
    conf.calibrate = 0;
    conf.bus_calibrate = 0;
    conf.catch_signals = 0;
    status_ = start(&conf);
  }

  ~starpu_session() {
    if (status_ == 0) stop_();
  }

  starpu_session(const starpu_session&) = delete;
  starpu_session& operator=(const starpu_session&) = delete;

  // starpu_init's result: 0 on success.
  int status() const noexcept { return status_; }
  bool ok() const noexcept { return status_ == 0; }

 private:
  static void prepare_environment() {
    setenv("STARPU_SILENT", "1", 1);
    if (std::getenv("STARPU_HOME") != nullptr) return;
    char exe[PATH_MAX];
    const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return;
    std::string dir(exe, static_cast<std::size_t>(len));
    dir.resize(dir.find_last_of('/'));
    dir += "/starpu_home";
    mkdir(dir.c_str(), 0755);  // fails harmlessly when it exists
    setenv("STARPU_HOME", dir.c_str(), 1);
  }

  stop_function stop_;
  int status_;
};

}  // namespace bench
