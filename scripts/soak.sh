#!/usr/bin/env bash
# weft's soak test: a mixed load for a given time, checked after every round
# (tests/soak/soak.cpp says what runs and what is checked).
#
#   scripts/soak.sh [--minutes N] [--build-dir DIR] [-- weft_soak arguments...]
#
#   --minutes N      how long to run; fractions are fine (0.5). Default 2, the
#                    test run; run it for an hour or more before a release.
#   --build-dir DIR  where weft_soak is built (default build/release). When
#                    DIR/tests/soak/weft_soak exists and is newer than the
#                    sources it is used as it is; otherwise it is built, and
#                    DIR is configured first if it is build/<preset> and not
#                    configured yet (cmake --preset <preset>).
#   -- ...           passed to weft_soak, e.g. -- --seed 7 --threads 4
#
# Sanitizer builds (--build-dir build/tsan or build/asan) run 5-20x slower,
# so they need looser WEFT time limits: the script then sets
# WEFT_STRESS_SCALE=0.2 (less work per round, as scripts/test.sh does for the
# stress tests) and a stall limit of 600 s instead of 60 s, plus the
# sanitizer options scripts/test.sh uses.
#
# The exit code is weft_soak's: 0 passed, 1 a check failed, 2 a stall (the
# stacks of all threads are printed above), 64 bad arguments; anything else
# is a crash or a sanitizer report. The last line printed is the totals line.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() {
  sed -n '5,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 64
}

minutes=2
build_dir=build/release
soak_args=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --minutes)
      [[ $# -ge 2 ]] || usage
      minutes=$2
      shift 2
      ;;
    --minutes=*)
      minutes=${1#--minutes=}
      shift
      ;;
    --build-dir)
      [[ $# -ge 2 ]] || usage
      build_dir=${2%/}
      shift 2
      ;;
    --build-dir=*)
      build_dir=${1#--build-dir=}
      build_dir=${build_dir%/}
      shift
      ;;
    --)
      shift
      soak_args=("$@")
      break
      ;;
    -h | --help) usage ;;
    *)
      echo "soak.sh: unknown argument '$1'" >&2
      usage
      ;;
  esac
done

if ! [[ $minutes =~ ^([0-9]+([.][0-9]*)?|[.][0-9]+)$ ]] ||
  awk -v m="$minutes" 'BEGIN { exit !(m <= 0) }'; then
  echo "soak.sh: --minutes needs a positive number, not '$minutes'" >&2
  exit 64
fi
seconds=$(awk -v m="$minutes" 'BEGIN { printf "%.1f", m * 60 }')

# ---- build (or reuse) weft_soak ---------------------------------------------

binary=$build_dir/tests/soak/weft_soak
jobs=${SOAK_BUILD_JOBS:-2}

stale() {
  [[ ! -x $binary ]] && return 0
  # Anything the binary is built from that changed since.
  [[ -n $(find include src tests/soak CMakeLists.txt tests/CMakeLists.txt \
    -newer "$binary" -type f -print -quit 2>/dev/null) ]]
}

if stale; then
  if [[ ! -f $build_dir/CMakeCache.txt ]]; then
    preset=$(basename "$build_dir")
    if [[ $build_dir == build/$preset ]] && grep -q "\"name\": \"$preset\"" CMakePresets.json; then
      echo "soak.sh: configuring $build_dir (cmake --preset $preset)"
      cmake --preset "$preset"
    else
      echo "soak.sh: $build_dir is not configured; use build/<preset> or configure it first" >&2
      exit 64
    fi
  fi
  echo "soak.sh: building weft_soak in $build_dir"
  cmake --build "$build_dir" --target weft_soak -j"$jobs"
else
  echo "soak.sh: using $binary (up to date)"
fi

# ---- run ----------------------------------------------------------------------

sanitizer=$(sed -n 's/^WEFT_SANITIZER:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
launcher=()
stall_seconds=60
if [[ -n $sanitizer ]]; then
  echo "soak.sh: note: $build_dir is a '$sanitizer' sanitizer build, which runs 5-20x slower;" \
    "it gets WEFT time limits to match: WEFT_STRESS_SCALE=0.2 and --stall-seconds 600"
  export WEFT_STRESS_SCALE=${WEFT_STRESS_SCALE:-0.2}
  stall_seconds=600
  if [[ $sanitizer == thread ]]; then
    export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
    # As in scripts/test.sh: GCC's TSan cannot map its shadow memory with
    # high mmap randomisation; run without ASLR where allowed.
    if setarch "$(uname -m)" -R true >/dev/null 2>&1; then
      launcher=(setarch "$(uname -m)" -R)
    fi
  else
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  fi
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "soak.sh: running $binary for $minutes minute(s)"
# A last resort on top of weft_soak's own watchdog (which prints the stacks):
# a hang after its last round, e.g. in exit.
limit=$(awk -v s="$seconds" -v t="$stall_seconds" 'BEGIN { printf "%d", s + 2 * t + 300 }')
set +e
timeout -k 30 "$limit" "${launcher[@]}" "$binary" --seconds "$seconds" \
  --stall-seconds "$stall_seconds" "${soak_args[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

totals=$(grep -E '^weft_soak: (PASS|FAIL) ' "$log" | tail -n1 || true)
echo
echo "======== soak: exit code $status ========"
if [[ $status -eq 124 ]]; then
  echo "soak.sh: weft_soak did not finish within $limit s and was killed"
fi
if [[ -n $totals ]]; then
  echo "$totals"
else
  echo "soak.sh: no totals line: weft_soak stopped early (exit code $status; see above)"
fi
exit "$status"
