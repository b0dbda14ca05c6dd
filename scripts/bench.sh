#!/usr/bin/env bash
# Builds weft's benchmarks and prints one table comparing weft with oneTBB,
# OpenMP, StarPU and a sequential baseline (see bench/README.md).
#
#   scripts/bench.sh
#
# Environment:
#   WEFT_BENCH_REPS    repetitions of every benchmark (default 5); the table
#                      shows medians over them
#   WEFT_BENCH_FILTER  a --benchmark_filter regex, e.g. 'fib/30|round_trip'
#
# Each competitor runs in its own process, one after another (never two at
# once): first its timing suite, then each of its peak-memory benchmarks in a
# fresh process, because a process's peak RSS never goes down. JSON results
# go to build/bench/results/. Exits non-zero if any result failed
# verification or an executable failed; a missed performance target only
# shows in the table.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

reps=${WEFT_BENCH_REPS:-5}
filter=${WEFT_BENCH_FILTER:-}
if ! [[ $reps =~ ^[1-9][0-9]*$ ]]; then
  echo "bench.sh: WEFT_BENCH_REPS must be a positive integer, not '$reps'" >&2
  exit 2
fi

scripts/deps.sh bench
cmake --preset bench
cmake --build --preset bench -j2

bin=build/bench/bench
results=build/bench/results
mkdir -p "$results"
rm -f "$results"/*.json

filter_args=()
if [[ -n $filter ]]; then
  filter_args=(--benchmark_filter="$filter")
fi

status=0
outputs=()
for competitor in weft tbb omp starpu seq; do
  exe=$bin/weft_bench_$competitor
  if [[ ! -x $exe ]]; then
    echo "bench.sh: $exe was not built (its library was not found); skipping $competitor"
    continue
  fi

  echo
  echo "== $competitor: timing, $reps repetitions"
  out=$results/$competitor.json
  if ! "$exe" "${filter_args[@]}" \
    --benchmark_repetitions="$reps" \
    --benchmark_enable_random_interleaving=true \
    --benchmark_display_aggregates_only=true \
    --benchmark_out="$out" --benchmark_out_format=json; then
    echo "bench.sh: $competitor's timing suite failed" >&2
    status=1
  fi
  # Google Benchmark leaves an empty file when the filter matches nothing.
  if [[ -s $out ]]; then
    outputs+=("$out")
  fi

  # One process per peak-memory benchmark. --benchmark_list_tests prints
  # nothing when the filter matches none of them.
  mapfile -t memory_benchmarks < <(
    "$exe" --peak_rss "${filter_args[@]}" --benchmark_list_tests=true 2>/dev/null
  )
  index=0
  for name in "${memory_benchmarks[@]}"; do
    echo "== $competitor: $name, a process of its own"
    out=$results/$competitor.peak_rss.$index.json
    index=$((index + 1))
    if ! "$exe" --peak_rss --benchmark_filter="^${name}\$" \
      --benchmark_out="$out" --benchmark_out_format=json; then
      echo "bench.sh: $competitor's $name failed" >&2
      status=1
    fi
    if [[ -s $out ]]; then
      outputs+=("$out")
    fi
  done
done

echo
if [[ ${#outputs[@]} -eq 0 ]]; then
  echo "bench.sh: no results (does WEFT_BENCH_FILTER='$filter' match any benchmark?)" >&2
  exit 1
fi
if ! "$bin/weft_bench_report" "${outputs[@]}"; then
  status=1
fi
exit "$status"
