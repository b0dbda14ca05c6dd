#!/usr/bin/env bash
# Compares two builds of a benchmark executable (before and after a change)
# row by row, for the "no benchmark more than 3% slower" rule (bench/README.md,
# "A/B comparisons").
#
#   scripts/ab.sh OLD_EXE NEW_EXE [--filter REGEX] [--rounds N] [--workers W] [--per-row]
#
#   OLD_EXE, NEW_EXE  two weft_bench_weft (or any bench) executables; copy the
#                     old one aside before rebuilding, e.g.
#                     cp build/bench/bench/weft_bench_weft /tmp/before
#   --filter REGEX    Google Benchmark's --benchmark_filter (default: all)
#   --rounds N        rounds; each runs both executables, the order
#                     alternating from round to round (default 6)
#   --workers W       WEFT_BENCH_WORKERS (default 2)
#   --per-row         runs every row on its own, both executables right after
#                     each other, instead of the whole filter per executable:
#                     the two runs of a pair are then seconds apart, not
#                     minutes, so a switch of the machine's speed rarely
#                     falls between them (slower: a process per row and side)
#
# Prints, per row: each side's median, the median of the per-round ratios
# new/old (the two runs of a round are adjacent in time), the ratio of the
# medians of each side's faster half, and "bimodal" when a side's slowest
# run took over 1.5x its fastest. Rows whose paired and faster-half ratios
# both exceed 1.03 are marked "<<". Needs python3; runs nothing else.
set -euo pipefail

usage() { # <exit status>: prints the comment above
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
  exit "$1"
}

[[ $# -ge 1 && ($1 == -h || $1 == --help) ]] && usage 0
[[ $# -ge 2 ]] || usage 2
old=$1
new=$2
shift 2
filter=.
rounds=6
workers=2
per_row=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --filter) filter=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --per-row) per_row=1; shift ;;
    -h | --help) usage 0 ;;
    *) echo "ab.sh: unknown option $1" >&2; usage 2 ;;
  esac
done
for exe in "$old" "$new"; do
  [[ -x $exe ]] || { echo "ab.sh: $exe is not an executable" >&2; exit 2; }
done

# The filters of one round's runs: the whole filter, or (--per-row) each
# row's full name, anchored, with the regex characters in it escaped.
filters=("$filter")
if ((per_row)); then
  mapfile -t names < <(WEFT_BENCH_WORKERS=$workers "$old" --benchmark_list_tests \
    --benchmark_filter="$filter")
  ((${#names[@]} > 0)) || { echo "ab.sh: no benchmark matches $filter" >&2; exit 2; }
  filters=()
  for name in "${names[@]}"; do
    # sed, not ${name//...}: the replacement refers to the matched character.
    # shellcheck disable=SC2001
    filters+=("^$(sed 's/[][\.^$*+?(){}|]/\\&/g' <<< "$name")\$")
  done
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 0; r < rounds; r++)); do
  if ((r % 2 == 0)); then order=(old new); else order=(new old); fi
  for ((k = 0; k < ${#filters[@]}; k++)); do
    for side in "${order[@]}"; do
      exe=$old
      [[ $side == new ]] && exe=$new
      row=""
      ((per_row)) && row=" (row $((k + 1))/${#filters[@]})"
      echo "round $((r + 1))/$rounds: $side$row" >&2
      WEFT_BENCH_WORKERS=$workers "$exe" --benchmark_filter="${filters[k]}" \
        --benchmark_format=json > "$out/$r.$side.$k.json" 2> "$out/$r.$side.$k.log" || {
        echo "ab.sh: $exe failed; its output:" >&2
        tail -n 20 "$out/$r.$side.$k.log" >&2
        exit 1
      }
    done
  done
done

python3 - "$out" "$rounds" <<'PY'
import glob, json, statistics, sys

out, rounds = sys.argv[1], int(sys.argv[2])
scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
times = {}  # row -> side -> [ns per round]
for r in range(rounds):
    for side in ("old", "new"):
        for path in sorted(glob.glob(f"{out}/{r}.{side}.*.json")):
            with open(path) as f:
                for b in json.load(f)["benchmarks"]:
                    if b.get("run_type") != "iteration":
                        continue
                    ns = b["real_time"] * scale[b["time_unit"]]
                    times.setdefault(b["run_name"], {}).setdefault(side, []).append(ns)

def faster_half(xs):
    xs = sorted(xs)
    return statistics.median(xs[: max(1, len(xs) // 2)])

def ms(ns):
    return f"{ns / 1e6:10.3f}"

print(f"{'row':58} {'old ms':>10} {'new ms':>10} {'paired':>6} {'fast':>6}")
for row, sides in times.items():
    if len(sides.get("old", [])) != rounds or len(sides.get("new", [])) != rounds:
        continue
    o, n = sides["old"], sides["new"]
    paired = statistics.median(b / a for a, b in zip(o, n))
    fast = faster_half(n) / faster_half(o)
    notes = []
    if max(o) > 1.5 * min(o) or max(n) > 1.5 * min(n):
        notes.append("bimodal")
    if paired > 1.03 and fast > 1.03:
        notes.append("<<")
    name = row.split("/min_time")[0].split("/iterations")[0]
    print(f"{name[:58]:58} {ms(statistics.median(o))} {ms(statistics.median(n))} "
          f"{paired:6.2f} {fast:6.2f} {' '.join(notes)}")
PY
