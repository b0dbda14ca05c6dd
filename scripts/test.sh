#!/usr/bin/env bash
# weft's full check, the same locally and in CI:
#   1 format check   2 release build + tests + examples   3 soak (2 minutes)
#   4 SPIN models   5 clang-tidy   6 API reference (Doxygen, warnings are errors)
#   7 ThreadSanitizer   8 AddressSanitizer + UBSan
#   9 clang-16 + libc++ 16: build, unit tests, examples, find_package
#  10 AArch64 (cross g++, run under qemu-user): build, unit tests, examples,
#     find_package; with --full only: it adds 23 minutes cold (18 to
#     build, 5 to test; measured at load 5-9 on the shared 2-core machine,
#     docs/platforms.md), and the default run is already near its time
#     limit. Its tests pass under
#     qemu; the deque's racing tests skip themselves there, as qemu-user
#     breaks even seq_cst store buffering (tests/support/litmus.hpp)
#  11 Windows x86-64 (MinGW-w64 g++, run under wine): build, unit, stress
#     and allocation tests, examples, find_package; with --full only: it
#     adds 24 minutes cold (18 to build, 5 to test; measured at load 5-9
#     on the shared 2-core machine, docs/platforms.md)
#  12 package check (find_package, add_subdirectory, FetchContent, pkg-config)
# SKIP_SANITIZERS=1 skips steps 7 and 8 for a quick local run; SOAK_MINUTES
# sets the soak's length (default 2).
#
#   scripts/test.sh [--full] [--only STEPS]
#
# --only runs the listed steps and no other, e.g. `--only 9,10,11` or
# `--only 2,12`: numbers and ranges (`9-11`), comma-separated. A step it
# names runs with or without --full. Steps 3, 5, 6 and 12 use step 2's
# build (build/release): name 2 too unless it is built already.
set -euo pipefail

usage() {
  echo "usage: $0 [--full] [--only STEPS]   (STEPS: e.g. 9,10,11 or 2-6,12; steps 1 to 12)" >&2
  exit 2
}

full=0
only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --full) full=1 ;;
    --only)
      [[ $# -ge 2 ]] || usage
      only=$2
      shift
      ;;
    --only=*) only=${1#--only=} ;;
    *) usage ;;
  esac
  shift
done

# selected[N] is 1 when step N runs: every step by default (10 and 11 with
# --full), only the listed ones with --only.
declare -a selected
for step in {1..12}; do selected[step]=1; done
if [[ $full == 0 ]]; then selected[10]=0 selected[11]=0; fi
if [[ -n $only ]]; then
  for step in {1..12}; do selected[step]=0; done
  IFS=, read -ra only_items <<<"$only"
  [[ ${#only_items[@]} -gt 0 ]] || usage
  for item in "${only_items[@]}"; do
    if [[ $item =~ ^([0-9]+)$ ]]; then
      first=${BASH_REMATCH[1]} last=${BASH_REMATCH[1]}
    elif [[ $item =~ ^([0-9]+)-([0-9]+)$ ]]; then
      first=${BASH_REMATCH[1]} last=${BASH_REMATCH[2]}
    else
      echo "test.sh: '$item' in --only is not a step number or range" >&2
      usage
    fi
    if ((10#$first < 1 || 10#$last > 12 || 10#$first > 10#$last)); then
      echo "test.sh: '$item' in --only is not a step or an ascending range within 1 to 12" >&2
      usage
    fi
    for ((step = 10#$first; step <= 10#$last; ++step)); do selected[step]=1; done
  done
fi

# Whether step $1 (named $2) runs; prints its SKIPPED line when it does not.
want() {
  [[ ${selected[$1]} == 1 ]] && return 0
  local why="not in --only $only"
  [[ -n $only ]] || why="scripts/test.sh --full runs it"
  printf '\n======== %s/12 %s: SKIPPED (%s) ========\n' "$1" "$2" "$why"
  return 1
}

# Steps 3, 5, 6 and 12 work on step 2's build.
need_release_build() {
  [[ -f build/release/CMakeCache.txt ]] && return 0
  echo "test.sh: step $1 needs step 2's build in build/release: add 2 to --only" >&2
  exit 2
}

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
jobs=2
step_started=$SECONDS
tests_passed=0

section() {
  printf '\n======== %s ========\n' "$*"
  step_started=$SECONDS
  phase_started=$SECONDS
}

section_done() {
  printf -- '-------- done in %ds\n' "$((SECONDS - step_started))"
}

# The GoogleTest cases the last ctest run in build directory $1 ran, from
# its log: every executable's summary lines added up (a ctest test is one
# case, or a whole executable where WEFT_TEST_PER_CASE is off).
gtest_cases() {
  local log=$1/Testing/Temporary/LastTest.log
  [[ -f $log ]] || return 0
  awk '/^\[  PASSED  \] [0-9]+ tests?\./ { p += $4 }
       /^\[  SKIPPED \] [0-9]+ tests?[.,]/ { s += $4 }
       /^\[  FAILED  \] [0-9]+ tests?[.,]/ { f += $4 }
       END { printf "-------- GoogleTest cases: %d passed, %d skipped, %d failed\n", p, s, f }' "$log"
}

# Installs the cross build in build/$1, builds tests/consumer against that
# package with the toolchain file cmake/toolchains/$2, and runs the program
# (file name $3) with the command that follows (the target's emulator).
# The toolchain files search the target's root only, so the package is
# named by its directory (weft_DIR).
cross_consumer() {
  local build=$1 toolchain=$2 program=$3
  shift 3
  local check=$root/build/package-check-$build config
  rm -rf "$check"
  cmake --install "build/$build" --prefix "$check/prefix"
  config=$(find "$check/prefix" -name weftConfig.cmake)
  [[ -n $config ]] || { echo "test.sh: the $build package has no weftConfig.cmake" >&2; exit 1; }
  cmake -S tests/consumer -B "$check/package" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/$toolchain" \
    -Dweft_DIR="$(dirname "$config")" -DWEFT_CONSUMER_MODE=package \
    -DWEFT_SOURCE_DIR="$root"
  cmake --build "$check/package" -j"$jobs"
  "$@" "$check/package/$program"
}

# Ends a part of a step (the platform steps' build, tests and consumer) and
# prints its time.
phase_done() {
  printf -- '-------- %s: %ds\n' "$1" "$((SECONDS - phase_started))"
  phase_started=$SECONDS
}

# ctest with its output kept, so the final line can add up what ran.
run_ctest() {
  local log
  log=$(mktemp)
  "$@" 2>&1 | tee "$log"
  local summary
  summary=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n1 || true)
  rm -f "$log"
  if [[ $summary =~ ([0-9]+)\ tests?\ failed\ out\ of\ ([0-9]+) ]]; then
    tests_passed=$((tests_passed + BASH_REMATCH[2] - BASH_REMATCH[1]))
  fi
}

# Tracked and untracked, non-ignored C++ files under the given directories.
cxx_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    local specs=() dir
    for dir in "$@"; do specs+=("$dir/*.hpp" "$dir/*.cpp"); done
    git ls-files -co --exclude-standard -- "${specs[@]}"
  else
    local dirs=() dir
    for dir in "$@"; do [[ -d $dir ]] && dirs+=("$dir"); done
    [[ ${#dirs[@]} -eq 0 ]] || find "${dirs[@]}" -type f \( -name '*.hpp' -o -name '*.cpp' \)
  fi | sort -u | while IFS= read -r file; do
    [[ -f $file ]] && printf '%s\n' "$file"
  done
}

bash scripts/deps.sh test

if want 1 "format check"; then
section "1/12 format check (clang-format --dry-run --Werror)"
mapfile -t format_files < <(cxx_files include src tests examples bench)
if [[ ${#format_files[@]} -eq 0 ]]; then
  echo "no C++ files to check"
else
  clang-format --dry-run --Werror "${format_files[@]}"
  echo "${#format_files[@]} files are formatted"
fi
section_done
fi

if want 2 "release"; then
section "2/12 release: build, unit + stress tests (WEFT_STRESS_SCALE=1), examples"
cmake --preset release
cmake --build --preset release -j"$jobs"
WEFT_STRESS_SCALE=1 run_ctest ctest --preset release
section_done
fi

if want 3 "soak"; then
need_release_build 3
section "3/12 soak: mixed load for ${SOAK_MINUTES:-2} minutes (scripts/soak.sh)"
bash scripts/soak.sh --minutes "${SOAK_MINUTES:-2}" --build-dir build/release
tests_passed=$((tests_passed + 1))
section_done
fi

if want 4 "SPIN models"; then
section "4/12 SPIN models of sleep/wake and idle detection (scripts/spin.sh)"
spin_log=$(mktemp)
bash scripts/spin.sh 2>&1 | tee "$spin_log"
if [[ $(tail -n1 "$spin_log") =~ ([0-9]+)\ passed ]]; then
  tests_passed=$((tests_passed + BASH_REMATCH[1]))
fi
rm -f "$spin_log"
section_done
fi

if want 5 "clang-tidy"; then
need_release_build 5
section "5/12 clang-tidy (src/*.cpp, src/core/*.cpp, src/graph/*.cpp, src/flow/*.cpp, src/mpi/*.cpp, src/platform/linux.cpp, examples/*.cpp, examples/blas/*.cpp)"
shopt -s nullglob
# Of the platform layer, the source this build compiles (the others need
# their system's headers).
tidy_files=(src/*.cpp src/core/*.cpp src/graph/*.cpp src/flow/*.cpp src/mpi/*.cpp src/platform/linux.cpp
  examples/*.cpp examples/blas/*.cpp)
shopt -u nullglob
if [[ ${#tidy_files[@]} -eq 0 ]]; then
  echo "no files to check"
else
  # clang-tidy 14 (Debian 12's default) fails on libstdc++ 12's <ranges>;
  # deps.sh installs clang-tidy-16 beside it.
  clang_tidy=clang-tidy
  if command -v clang-tidy-16 >/dev/null 2>&1; then clang_tidy=clang-tidy-16; fi
  echo "using $("$clang_tidy" --version | grep -o 'version [0-9.]*')"
  printf '%s\0' "${tidy_files[@]}" |
    xargs -0 -n1 -P"$jobs" "$clang_tidy" -p build/release --quiet --warnings-as-errors='*'
  echo "${#tidy_files[@]} files are clean"
fi
section_done
fi

if want 6 "API reference"; then
need_release_build 6
section "6/12 API reference: Doxygen over the public headers, any warning fails (weft_docs)"
cmake --build --preset release --target weft_docs
echo "API reference: build/release/docs/html/index.html"
section_done
fi

if [[ ${SKIP_SANITIZERS:-0} == 1 ]] && ((selected[7] || selected[8])); then
  section "7/12 and 8/12 sanitizers: SKIPPED (SKIP_SANITIZERS=1)"
else
  # GCC's ThreadSanitizer cannot map its shadow memory on kernels with high
  # mmap randomisation; running without ASLR sidesteps that where allowed.
  no_aslr=()
  if setarch "$(uname -m)" -R true >/dev/null 2>&1; then
    no_aslr=(setarch "$(uname -m)" -R)
  fi

  if want 7 "ThreadSanitizer"; then
  section "7/12 ThreadSanitizer: build, tests (WEFT_STRESS_SCALE=0.2), examples"
  cmake --preset tsan
  cmake --build --preset tsan -j"$jobs"
  WEFT_STRESS_SCALE=0.2 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    run_ctest "${no_aslr[@]}" ctest --preset tsan
  section_done
  fi

  if want 8 "AddressSanitizer + UBSan"; then
  section "8/12 AddressSanitizer + UBSan: build, tests (WEFT_STRESS_SCALE=0.2), examples"
  cmake --preset asan
  cmake --build --preset asan -j"$jobs"
  WEFT_STRESS_SCALE=0.2 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest ctest --preset asan
  section_done
  fi
fi

if want 9 "clang-16 + libc++ 16"; then
section "9/12 clang-16 + libc++ 16: build, unit tests (WEFT_STRESS_SCALE=0.2), examples, find_package"
# libc++ toolchains (Apple's among them) build weft too; this one has no MPI
# (Debian's OpenMPI C++ parts are built for libstdc++), no stress tests
# beyond the unit suite's, and the consumer in find_package mode.
cmake --preset clang-libcxx
cmake --build --preset clang-libcxx -j"$jobs"
phase_done "configure and build"
WEFT_STRESS_SCALE=0.2 run_ctest ctest --preset clang-libcxx -LE stress
gtest_cases build/clang-libcxx
phase_done "tests and examples"
libcxx_check=$root/build/package-check-libcxx
rm -rf "$libcxx_check"
cmake --install build/clang-libcxx --prefix "$libcxx_check/prefix"
cmake -S tests/consumer -B "$libcxx_check/package" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-16 \
  -DCMAKE_CXX_FLAGS=-stdlib=libc++ -DCMAKE_EXE_LINKER_FLAGS=-stdlib=libc++ \
  -DCMAKE_PREFIX_PATH="$libcxx_check/prefix" -DWEFT_CONSUMER_MODE=package \
  -DWEFT_SOURCE_DIR="$root"
cmake --build "$libcxx_check/package" -j"$jobs"
"$libcxx_check/package/weft_consumer"
echo "-- libc++ consumer in package mode: ran OK"
phase_done "install and consumer"
section_done
fi

if want 10 "AArch64 Linux"; then
section "10/12 AArch64 Linux (g++-aarch64-linux-gnu, qemu-user): build, unit tests (WEFT_STRESS_SCALE=0.2), examples, find_package"
# ctest runs every test and example through qemu-aarch64 (the toolchain
# file's CMAKE_CROSSCOMPILING_EMULATOR). The unit tests pass there: qemu-user
# runs the guest on the host's memory ordering and weaker (no fence between
# an stlr and a later ldar, so seq_cst store buffering fails), so the
# deque's racing tests skip themselves when the store-buffering probe
# (tests/support/litmus.hpp) fails at the start of the run, and flow_test's
# fork tests skip under qemu. This checks the port, not weak ordering
# (docs/deque.md and docs/sleep.md, "On a weakly ordered CPU").
# The preset runs each test executable as one process (WEFT_TEST_PER_CASE
# off): under qemu, starting a process costs more than most cases take.
# What ctest runs here is built, no more: not the stress tests or the soak.
cmake --preset aarch64
mapfile -t aarch64_examples < <(cmake --build build/aarch64 --target help | awk '/ example_/ { print $2 }')
cmake --build --preset aarch64 -j"$jobs" --target weft_unit_tests weft_alloc_tests \
  "${aarch64_examples[@]}"
phase_done "configure and build"
WEFT_STRESS_SCALE=0.2 run_ctest ctest --preset aarch64 -LE stress
gtest_cases build/aarch64
phase_done "tests and examples"
cross_consumer aarch64 aarch64-linux-gnu.cmake weft_consumer \
  qemu-aarch64 -L /usr/aarch64-linux-gnu
echo "-- AArch64 consumer in package mode: ran OK under qemu-aarch64"
phase_done "install and consumer"
section_done
fi

if want 11 "Windows x86-64 (MinGW-w64)"; then
section "11/12 Windows x86-64 (g++-mingw-w64-x86-64-posix, wine64): build, unit, stress (WEFT_STRESS_SCALE=0.2) and allocation tests, examples, find_package"
# ctest runs every test and example through wine64 (the toolchain file's
# CMAKE_CROSSCOMPILING_EMULATOR), with its prefix in build/mingw/wine (made
# on the first start). Linked statically: wine needs no MinGW DLL. One
# process per test executable (WEFT_TEST_PER_CASE off), as for AArch64:
# wine takes about a second to start a process. What ctest runs here is
# built, no more: not the soak.
cmake --preset mingw
# No debugger on a crash (a program that does not exist): wine would
# start winedbg, which waits, and the test would time out.
wine64=$(command -v wine64 || echo /usr/lib/wine/wine64)  # Debian keeps it off PATH
mingw_wine=(env WINEPREFIX="$root/build/mingw/wine" WINEDEBUG=-all "$wine64")
"${mingw_wine[@]}" reg add \
  'HKLM\Software\Microsoft\Windows NT\CurrentVersion\AeDebug' /v Debugger /d false /f
mapfile -t mingw_examples < <(cmake --build build/mingw --target help | awk '/ example_/ { print $2 }')
cmake --build --preset mingw -j"$jobs" --target weft_unit_tests weft_alloc_tests weft_stress_tests \
  "${mingw_examples[@]}"
phase_done "configure, wine prefix and build"
WEFT_STRESS_SCALE=0.2 run_ctest ctest --preset mingw
gtest_cases build/mingw
phase_done "tests and examples"
# Run under wine in the same prefix as the tests.
cross_consumer mingw x86_64-w64-mingw32.cmake weft_consumer.exe "${mingw_wine[@]}"
echo "-- MinGW consumer in package mode: ran OK under wine64"
phase_done "install and consumer"
section_done
fi

if want 12 "package check"; then
need_release_build 12
section "12/12 package check: install, then find_package / add_subdirectory / FetchContent / pkg-config"
check_dir=$root/build/package-check
rm -rf "$check_dir"
cmake --install build/release --prefix "$check_dir/prefix"
for mode in package subdirectory fetchcontent; do
  echo "-- consumer in $mode mode"
  cmake -S tests/consumer -B "$check_dir/$mode" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$check_dir/prefix" \
    -DWEFT_CONSUMER_MODE="$mode" \
    -DWEFT_SOURCE_DIR="$root"
  cmake --build "$check_dir/$mode" -j"$jobs"
  "$check_dir/$mode/weft_consumer"
  echo "-- consumer in $mode mode: ran OK"
done
# The same program built without CMake, from the installed weft.pc alone.
echo "-- consumer with pkg-config"
pc_file=$(find "$check_dir/prefix" -name weft.pc)
[[ -n $pc_file ]] || { echo "test.sh: the package has no weft.pc" >&2; exit 1; }
pc_flags=$(PKG_CONFIG_PATH=$(dirname "$pc_file") pkg-config --cflags --libs weft)
echo "pkg-config --cflags --libs weft: $pc_flags"
# shellcheck disable=SC2086 # pkg-config's output is a list of words
"${CXX:-c++}" -std=c++20 tests/consumer/main.cpp -o "$check_dir/pkg_config_consumer" $pc_flags
"$check_dir/pkg_config_consumer"
echo "-- consumer with pkg-config: ran OK"
section_done
fi

ran="all steps"
[[ -z $only ]] || ran="step(s) $only"
printf '\nscripts/test.sh: %s passed in %dm%02ds\n' "$ran" "$((SECONDS / 60))" "$((SECONDS % 60))"
echo "tests: $tests_passed passed, 0 failed"
