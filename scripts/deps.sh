#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages weft needs, and only those missing.
#
#   scripts/deps.sh test    compiler, CMake, GoogleTest, clang-format/-tidy, graphviz,
#                           spin (the model checker), gdb (the soak's watchdog),
#                           OpenBLAS + LAPACKE (examples/blas/cholesky.cpp),
#                           pkg-config (the package check), doxygen (the API
#                           reference) and matplotlib (the test of
#                           bench/report/report.py), OpenMPI (weft::mpi, its
#                           tests and examples/cholesky_mpi.cpp)
#                           (clang-tidy-16 too: clang-tidy 14 cannot parse
#                           libstdc++ 12's <ranges> in C++20 mode), and
#                           clang-16 with libc++ 16 (the libc++ build), and
#                           g++-aarch64-linux-gnu with qemu-user (the AArch64
#                           build, its tests run under qemu-aarch64), and
#                           g++-mingw-w64-x86-64-posix with wine64 (the
#                           Windows build, its tests run under wine)
#   scripts/deps.sh bench   compiler, CMake, Google Benchmark, oneTBB, OpenBLAS +
#                           LAPACKE, StarPU (with StarPU-MPI), OpenMPI, and
#                           matplotlib (the report's charts)
#
# As root it runs apt-get itself; otherwise it prints the command to run and
# exits 1. Prints one line and changes nothing when everything is installed.
set -euo pipefail

usage() {
  echo "usage: $0 <test|bench>" >&2
  exit 2
}

[[ $# -eq 1 ]] || usage
case "$1" in
  test) packages=(g++ cmake make googletest libgtest-dev libgmock-dev clang-format clang-tidy clang-tidy-16 clang-16 libc++-16-dev libc++abi-16-dev g++-aarch64-linux-gnu qemu-user g++-mingw-w64-x86-64-posix wine64 graphviz spin gdb pkg-config doxygen libopenblas-dev liblapacke-dev python3-matplotlib libopenmpi-dev openmpi-bin) ;;
  bench) packages=(g++ cmake make libbenchmark-dev libtbb-dev libopenblas-dev liblapacke-dev libstarpu-dev pkg-config python3-matplotlib libopenmpi-dev openmpi-bin) ;;
  *) usage ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "deps.sh: not a Debian/Ubuntu system; make sure the equivalents of these are installed:" \
    "${packages[*]}" >&2
  exit 0
fi

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  if [[ $status != "install ok installed" ]]; then
    missing+=("$package")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "deps.sh: all ${#packages[@]} packages for '$1' are installed"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "deps.sh: missing packages for '$1': ${missing[*]}" >&2
  echo "deps.sh: install them with:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

echo "deps.sh: installing missing packages for '$1': ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -q; then
  echo "deps.sh: FAILED: apt-get update" >&2
  exit 1
fi
if ! apt-get install -y -q --no-install-recommends "${missing[@]}"; then
  echo "deps.sh: FAILED to install: ${missing[*]}" >&2
  exit 1
fi

# apt-get can succeed without installing a name it resolved to something
# else; check again so a wrong name fails here and not later in the build.
still_missing=()
for package in "${missing[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || still_missing+=("$package")
done
if [[ ${#still_missing[@]} -ne 0 ]]; then
  echo "deps.sh: FAILED: still not installed after apt-get: ${still_missing[*]}" >&2
  exit 1
fi
echo "deps.sh: installed ${missing[*]}"
