#!/usr/bin/env bash
# The submit-and-wait round trip's spread over processes (bench/round_trip).
# Where a thread lands decides that latency on a small machine, and it stays
# where it lands for the whole process, so one process's median says little:
# this runs every library's round_trip benchmark in N processes, interleaved
# (weft, oneTBB, OpenMP, weft, ...), and prints the lowest, median and
# highest of the processes' medians.
#
#   scripts/round_trip.sh [--processes N] [--build-dir DIR]
#
#   --processes N   processes per library (default 9)
#   --build-dir DIR the benchmark build (default build/bench; built with
#                   the bench preset when it is the default and missing)
set -euo pipefail

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
  exit "$1"
}

processes=9
build_dir=
while [[ $# -gt 0 ]]; do
  case "$1" in
    --processes) processes=${2:?--processes needs a number}; shift ;;
    --build-dir) build_dir=${2:?--build-dir needs a directory}; shift ;;
    -h | --help) usage 0 ;;
    *) usage 2 >&2 ;;
  esac
  shift
done
if ! [[ $processes =~ ^[1-9][0-9]*$ ]]; then
  echo "round_trip.sh: --processes takes a positive integer, not '$processes'" >&2
  exit 2
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ -z $build_dir ]]; then
  build_dir=build/bench
  if [[ ! -d $build_dir/bench ]]; then
    scripts/deps.sh bench
    cmake --preset bench
  fi
  cmake --build --preset bench -j2
fi

libraries=()
for library in weft tbb omp; do
  [[ -x $build_dir/bench/weft_bench_$library ]] && libraries+=("$library")
done
[[ ${#libraries[@]} -gt 0 ]] || { echo "round_trip.sh: no benchmark executables in $build_dir/bench" >&2; exit 1; }

declare -A medians=()
for ((p = 1; p <= processes; p++)); do
  for library in "${libraries[@]}"; do
    out=$("$build_dir/bench/weft_bench_$library" --benchmark_filter='^round_trip/' \
      --benchmark_format=json 2>/dev/null)
    median=$(python3 -c 'import json,sys
rows=[b for b in json.load(sys.stdin)["benchmarks"] if "median_ns" in b]
if not rows: sys.exit("no round_trip row")
print(rows[0]["median_ns"])' <<<"$out")
    medians[$library]+="$median "
  done
done

printf '%-8s %10s %10s %10s   %s\n' library lowest median highest "per-process medians (ns)"
for library in "${libraries[@]}"; do
  python3 -c 'import sys
v=sorted(float(x) for x in sys.argv[2].split())
print("%-8s %10.0f %10.0f %10.0f   %s" % (sys.argv[1], v[0], v[len(v)//2], v[-1],
      " ".join("%.0f" % x for x in map(float, sys.argv[2].split()))))' "$library" "${medians[$library]}"
done
