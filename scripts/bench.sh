#!/usr/bin/env bash
# Builds weft's benchmarks, runs them against oneTBB, OpenMP, StarPU and a
# sequential baseline, and writes a report with charts (see bench/README.md).
#
#   scripts/bench.sh [--full] [--filter REGEX] [--threads LIST] [--compare OLD.json] [--reps N]
#
#   (none)            the quick set: every workload but its largest sizes
#                     (quick_skip below), 3 repetitions; about 3 minutes on 2 cores
#   --full            every benchmark, 5 repetitions
#   --filter REGEX    the benchmarks whose name REGEX matches (Google
#                     Benchmark's --benchmark_filter), whatever their size
#   --threads LIST    the worker counts of the scaling series, e.g. 1,2,4:
#                     the scaling workloads run once per count. Default: 1,
#                     then doubling up to the usable CPUs (nproc), and nproc
#   --compare OLD.json  adds weft's new/old ratio per row, with regressions
#                     over 5% flagged (OLD.json: a build/bench/report/results.json
#                     kept from an earlier run)
#   --reps N          repetitions of every benchmark
#
# Environment: WEFT_BENCH_REPS and WEFT_BENCH_FILTER are the defaults of
# --reps and --filter; WEFT_BENCH_WORKERS (default 2) is the worker count of
# the main run.
#
# One process per library and workload, one at a time, a workload's
# libraries one after the other; each peak-memory benchmark in a process of
# its own, since a process's peak RSS never goes down. Last, the
# distributed benchmarks (weft_bench_<workload>_mpi_<library>, issue 14),
# each as 2 processes under mpirun with half the workers each (1 of the
# default 2), without random interleaving. Google Benchmark's
# JSON goes to build/bench/results/ (its console output to
# build/bench/results/log/), then bench/report/report.py prints the table
# with the targets and writes build/bench/report/report.md with its charts.
# Exits non-zero if any result failed verification or an executable failed;
# a missed target or a regression only shows in the report.
set -euo pipefail

usage() { # <exit status>: prints the comment above
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
  exit "$1"
}

# The workloads whose speed-up against the number of workers the report
# plots (unbalanced_tree's shows whether stealing balances its lopsided
# recursion; skynet's and nqueens' how the cost of a spawn scales, with ten
# children per node and with an uneven fan-out), and the sizes the quick
# set leaves out (hipe's middle job counts: K = 4 and 64 already show how
# the split matters).
scaling_workloads=(fib matmul cholesky unbalanced_tree skynet nqueens)
quick_skip='^(fib/32|skynet/10000000|nqueens/14|matmul/1024|cholesky(_mpi)?/4096|linear_chain(_run)?/4194304|hipe/compute_(8|16|32)_jobs)/'

full=0
filter=${WEFT_BENCH_FILTER:-}
reps=${WEFT_BENCH_REPS:-}
threads=
compare=
while [[ $# -gt 0 ]]; do
  case "$1" in
    --full) full=1 ;;
    --filter) filter=${2:?--filter needs a regex}; shift ;;
    --threads) threads=${2:?--threads needs a list}; shift ;;
    --compare) compare=$(realpath "${2:?--compare needs a file}"); shift ;;
    --reps) reps=${2:?--reps needs a number}; shift ;;
    -h | --help) usage 0 ;;
    *) usage 2 >&2 ;;
  esac
  shift
done
if [[ -z $reps ]]; then
  reps=$((full ? 5 : 3))
fi
if ! [[ $reps =~ ^[1-9][0-9]*$ ]]; then
  echo "bench.sh: the repetitions must be a positive integer, not '$reps'" >&2
  exit 2
fi
if [[ -n $compare && ! -f $compare ]]; then
  echo "bench.sh: --compare: no file $compare" >&2
  exit 2
fi
main_workers=${WEFT_BENCH_WORKERS:-2}
if ! [[ $main_workers =~ ^[1-9][0-9]*$ ]]; then
  echo "bench.sh: WEFT_BENCH_WORKERS must be a positive integer, not '$main_workers'" >&2
  exit 2
fi
if [[ -z $threads ]]; then
  cpus=$(nproc)
  threads=1
  for ((n = 2; n < cpus; n *= 2)); do threads+=",$n"; done
  [[ $cpus -gt 1 ]] && threads+=",$cpus"
fi
if ! [[ $threads =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]]; then
  echo "bench.sh: --threads takes worker counts separated by commas, not '$threads'" >&2
  exit 2
fi
IFS=, read -ra counts <<<"$threads"

cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/deps.sh bench
cmake --preset bench
cmake --build --preset bench -j2

# Debian's python3-matplotlib is for Debian's interpreter, which another
# python3 earlier on the PATH (pyenv, a virtualenv) would not see.
python=/usr/bin/python3
[[ -x $python ]] || python=python3

bin=build/bench/bench
results=build/bench/results
mkdir -p "$results/log"
rm -f "$results"/*.json "$results"/log/*.txt

filter_args=()
[[ -z $filter ]] || filter_args=(--benchmark_filter="$filter")

# An exact --benchmark_filter for a list of names (one a line): every
# character but letters, digits and _/:- escaped with a backslash.
exact_filter() {
  local names
  # shellcheck disable=SC2001 # sed edits every line of the list at once
  names=$(sed 's/[^A-Za-z0-9_/:-]/\\&/g' <<<"$1" | paste -sd'|')
  printf '^(%s)$' "$names"
}

# The benchmarks of a competitor that this run selects, one a line.
selected() {
  local exe=$1
  shift
  "$exe" "$@" "${filter_args[@]}" --benchmark_list_tests=true 2>/dev/null |
    if [[ $full == 0 && -z $filter ]]; then grep -Ev "$quick_skip" || true; else cat; fi
}

# ---- the list of processes to run ---------------------------------------------
# Task i runs the benchmarks task_filter[i] of the executable task_exe[i]
# (competitor task_competitor[i]) with task_workers[i] workers;
# task_suite[i] is "timing", "peak_rss" or "mpi" (timing, under mpirun).
# Its weight is the number of benchmark runs it makes, its key what it runs.
task_competitor=() task_workload=() task_workers=() task_suite=() task_filter=()
task_weight=() task_key=() task_exe=()
add_task() { # <competitor> <workload> <workers> <suite> <names, one a line> [executable]
  local filter weight=1
  filter=$(exact_filter "$5")
  [[ $4 == peak_rss ]] || weight=$(($(wc -l <<<"$5") * reps))
  task_competitor+=("$1") task_workload+=("$2") task_workers+=("$3") task_suite+=("$4")
  task_filter+=("$filter") task_weight+=("$weight") task_exe+=("${6:-weft_bench_$1}")
  task_key+=("$1 $3 $4 $reps $(paste -sd, <<<"$5")")
}

competitors=()
workloads=()
declare -A names_of=() # "<competitor> <workload>" -> its selected timing benchmarks
for competitor in weft tbb omp starpu seq; do
  exe=$bin/weft_bench_$competitor
  if [[ ! -x $exe ]]; then
    echo "bench.sh: $exe was not built (its library was not found); skipping $competitor"
    continue
  fi
  competitors+=("$competitor")
  while IFS= read -r name; do
    workload=${name%%/*}
    key="$competitor $workload"
    names_of[$key]+="${names_of[$key]:+$'\n'}$name"
    [[ " ${workloads[*]} " == *" $workload "* ]] || workloads+=("$workload")
  done < <(selected "$exe")
done

for workload in "${workloads[@]}"; do
  for competitor in "${competitors[@]}"; do
    key="$competitor $workload"
    [[ -n ${names_of[$key]:-} ]] || continue
    add_task "$competitor" "$workload" "$main_workers" timing "${names_of[$key]}"
  done
done
for competitor in "${competitors[@]}"; do
  while IFS= read -r name; do
    [[ -n $name ]] || continue
    add_task "$competitor" "${name%%/*}" "$main_workers" peak_rss "$name"
  done < <(selected "$bin/weft_bench_$competitor" --peak_rss)
done
# The scaling series: the main run gives its own count; seq has no workers.
for workers in "${counts[@]}"; do
  [[ $workers != "$main_workers" ]] || continue
  for workload in "${scaling_workloads[@]}"; do
    for competitor in "${competitors[@]}"; do
      key="$competitor $workload"
      [[ $competitor != seq && -n ${names_of[$key]:-} ]] || continue
      add_task "$competitor" "$workload" "$workers" timing "${names_of[$key]}"
    done
  done
done

# The distributed benchmarks (issue 14), after all the others: every
# weft_bench_<workload>_mpi_<competitor> that was built (StarPU-MPI's, and
# weft::mpi's once it exists), a workload's libraries one after the other,
# each run as mpi_ranks processes by mpirun. --bind-to none: mpirun would
# bind each rank to one core, and with it the library's helper threads (a
# progress thread that polls); unbound, the system places every thread, as
# for weft's unpinned pool. --oversubscribe: a machine with fewer cores
# than ranks runs them all the same.
mpi_ranks=2
mpirun=(mpirun --oversubscribe --bind-to none -np "$mpi_ranks")
[[ $(id -u) -ne 0 ]] || mpirun+=(--allow-run-as-root)
for competitor in weft tbb omp starpu seq; do
  for exe in "$bin"/weft_bench_*_mpi_"$competitor"; do
    [[ -x $exe ]] || continue
    if ! command -v mpirun >/dev/null; then
      echo "bench.sh: no mpirun (Debian: openmpi-bin); skipping ${exe##*/}"
      continue
    fi
    names=$(selected "$exe")
    [[ -n $names ]] || continue
    add_task "$competitor" "${names%%/*}" "$main_workers" mpi "$names" "${exe##*/}"
  done
done

tasks=${#task_competitor[@]}
if [[ $tasks -eq 0 ]]; then
  echo "bench.sh: no benchmarks to run (does --filter '$filter' match any?)" >&2
  exit 1
fi

# ---- progress: k of n, elapsed, and an estimate of what is left ---------------
# A task is expected to take what it took the last time it succeeded
# (build/bench/timings.txt, keyed by what it runs), or else its benchmarks x
# repetitions at the pace of this run so far (at first 0.5 s each).
timings=build/bench/timings.txt
declare -A took=()
if [[ -f $timings ]]; then
  while read -r seconds key; do took[$key]=$seconds; done <"$timings"
fi
clock() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }

started=$SECONDS
done_weight=0
estimate_left() {
  local from=$1 i seconds left_ms=0 pace_ms=500
  if [[ $done_weight -gt 0 ]]; then pace_ms=$(((SECONDS - started) * 1000 / done_weight)); fi
  for ((i = from; i < tasks; i++)); do
    seconds=${took[${task_key[i]}]:-}
    if [[ -n $seconds ]]; then
      left_ms=$((left_ms + seconds * 1000))
    else
      left_ms=$((left_ms + task_weight[i] * pace_ms))
    fi
  done
  echo $((left_ms / 1000))
}

# ---- running ------------------------------------------------------------------
status=0
outputs=()
for ((i = 0; i < tasks; i++)); do
  competitor=${task_competitor[i]} workload=${task_workload[i]} workers=${task_workers[i]}
  what="$workload, $competitor"
  case ${task_suite[i]} in
    peak_rss) what+=" (peak memory)" ;;
    mpi) what+=" ($mpi_ranks processes)" ;;
  esac
  [[ $workers == "$main_workers" ]] || what+=" with $workers worker$( ((workers == 1)) || echo s)"
  printf '[%*d/%d] %-44s %s elapsed, about %s left\n' ${#tasks} $((i + 1)) "$tasks" "$what" \
    "$(clock $((SECONDS - started)))" "$(clock "$(estimate_left "$i")")"

  name=$(printf '%03d' $((i + 1))).$competitor.$workload.w$workers
  out=$results/$name.json
  log=$results/log/$name.txt
  args=(--benchmark_filter="${task_filter[i]}" --benchmark_out="$out" --benchmark_out_format=json)
  launch=()
  case ${task_suite[i]} in
    timing)
      args+=(--benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true
        --benchmark_display_aggregates_only=true) ;;
    peak_rss) args+=(--peak_rss) ;;
    mpi)
      # No random interleaving: every rank must run the same benchmarks in
      # the same order (its shuffle is seeded per process). The timeout
      # ends a run that StarPU-MPI or another library left waiting forever.
      args+=(--benchmark_repetitions="$reps" --benchmark_display_aggregates_only=true)
      launch=(timeout --kill-after=30 1800 "${mpirun[@]}") ;;
  esac
  task_started=$SECONDS
  if WEFT_BENCH_WORKERS=$workers "${launch[@]}" "$bin/${task_exe[i]}" "${args[@]}" >"$log" 2>&1; then
    took[${task_key[i]}]=$((SECONDS - task_started))
  else
    echo "bench.sh: $what failed; the end of $log:" >&2
    tail -n 15 "$log" >&2
    status=1
  fi
  done_weight=$((done_weight + task_weight[i]))
  # Google Benchmark leaves an empty file when it ran nothing.
  if [[ -s $out ]]; then outputs+=("$out"); fi
done
for key in "${!took[@]}"; do echo "${took[$key]} $key"; done >"$timings"
echo "bench.sh: ran $tasks processes in $(clock $((SECONDS - started)))"

# A trace of tiled Cholesky factorisations (n = 2048, 2 workers), drawn by
# the report as gantt.png (docs/tracing.md); one short process, not timed
# (the rings keep the last 65,536 records per worker).
trace=$results/trace_cholesky.json
rm -f "$trace"
if WEFT_TRACE=$trace WEFT_BENCH_WORKERS=$main_workers "$bin/weft_bench_weft" \
  --benchmark_filter='^cholesky/2048/' --benchmark_repetitions=1 \
  >"$results/log/trace_cholesky.txt" 2>&1 && [[ -s $trace ]]; then
  echo "bench.sh: traced a Cholesky run into $trace"
else
  echo "bench.sh: the traced Cholesky run failed; see $results/log/trace_cholesky.txt" >&2
  trace=
fi

echo
if [[ ${#outputs[@]} -eq 0 ]]; then
  echo "bench.sh: no results" >&2
  exit 1
fi
report_args=(--out build/bench/report --workers "$main_workers")
[[ -z $compare ]] || report_args+=(--compare "$compare")
[[ -z $trace ]] || report_args+=(--trace "$trace")
if ! "$python" bench/report/report.py "${report_args[@]}" "${outputs[@]}"; then
  status=1
fi
exit "$status"
