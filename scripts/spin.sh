#!/usr/bin/env bash
# Model-checks weft's protocols with SPIN (verify/*.pml; docs/sleep.md and
# docs/waiting.md, "The model" sections, say what each check means).
#
# Every check generates a verifier (spin -a), compiles it with gcc and runs
# it. A "pass" check must explore its whole state space with no error; an
# "error" check is a variant with a known flaw (-DBUG...) or a known
# limitation, and must make SPIN report an error, which shows the model and
# its properties can catch that flaw. One line per check, then
# "spin: N passed, M failed"; exit 1 if any check failed.
#
# About a minute and a half on two busy cores. SPIN_KEEP=1 keeps the work
# directory (verifiers, trails) for a look at a counterexample:
#   cd DIR/NAME && spin -t -p DEFINES MODEL.pml
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

if ! command -v spin >/dev/null 2>&1; then
  echo "spin: the SPIN model checker is not installed; install it with: apt-get install spin" >&2
  exit 1
fi
if ! command -v gcc >/dev/null 2>&1; then
  echo "spin: gcc is needed to compile the verifiers; install it with: apt-get install gcc" >&2
  exit 1
fi

work=$(mktemp -d)
if [[ "${SPIN_KEEP:-0}" == 1 ]]; then
  echo "spin: work directory $work"
else
  trap 'rm -rf "$work"' EXIT
fi

# How pan reports an error (its header also names "invalid end states").
error_line='^pan:[0-9]+: (assertion violated|invalid end state|acceptance cycle|non-progress cycle)'

passed=0
failed=0
n=0

# check NAME MODEL MODE EXPECT DEFINES...
#   MODE: safety (-DSAFETY: assertions, invalid end states) or
#         live (-DNFAIR=3, pan -a -f: the model's LTL property under weak
#         fairness, plus assertions)
#   EXPECT: pass (no error, search complete), error (SPIN must find one), or
#         bug (the same, for a variant whose counterexample comes within a
#         few thousand states: compiled with -O0, which compiles 5x faster)
check() {
  local name=$1 model=$2 mode=$3 expect=$4
  shift 4
  local defines=("$@")
  n=$((n + 1))
  local dir
  dir="$work/$(printf '%02d' "$n")-${name//[^A-Za-z0-9_.-]/_}"
  mkdir -p "$dir"
  cp "$root/verify/$model.pml" "$dir/"

  local cflags=(-w -DCOLLAPSE -DMEMLIM=2048)
  if [[ $expect == bug ]]; then cflags+=(-O0); else cflags+=(-O2); fi
  local runflags=(-m1000000)
  if [[ $mode == safety ]]; then
    cflags+=(-DSAFETY)
  else
    cflags+=(-DNFAIR=3)
    runflags+=(-a -f)
  fi

  local out status=ok t0=$SECONDS
  if ! (cd "$dir" && spin "${defines[@]}" -a "$model.pml" >spin.log 2>&1); then
    status="spin -a failed: $(tail -n1 "$dir/spin.log")"
  elif ! (cd "$dir" && gcc "${cflags[@]}" -o pan pan.c >gcc.log 2>&1); then
    status="gcc failed: $(tail -n1 "$dir/gcc.log")"
  else
    (cd "$dir" && ./pan "${runflags[@]}" >pan.log 2>&1)
  fi

  local states="?" errors="?" what=""
  if [[ $status == ok ]]; then
    out=$(cat "$dir/pan.log")
    states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' <<<"$out" | head -n1)
    errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$out" | head -n1)
    what=$(grep -m1 -E "$error_line" <<<"$out" |
      sed -E 's/^pan:[0-9]+: //; s/ \(at depth [0-9]+\)//' | cut -c1-60)
    [[ -z $states ]] && states="?"
    [[ -z $errors ]] && errors="?"
  fi

  local verdict note
  if [[ $status != ok ]]; then
    verdict=FAIL
    note=$status
  elif [[ $expect == pass ]]; then
    if [[ $errors == 0 && -z $what ]] &&
      ! grep -qE 'reached -DMEMLIM|Search not completed|max search depth too small' "$dir/pan.log"; then
      verdict=ok
      note="no error"
    else
      verdict=FAIL
      note="errors: $errors ${what:-search incomplete (memory or depth bound)}"
    fi
  else
    if [[ $errors =~ ^[1-9][0-9]*$ ]] || [[ -n $what ]]; then
      verdict=ok
      note="error found as expected: $what"
    else
      verdict=FAIL
      note="expected an error, SPIN found none"
    fi
  fi

  if [[ $verdict == ok ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
  printf '%-4s %-30s %-6s %9s states, stored %4ss  %s\n' "$verdict" "$name" "$mode" "$states" \
    "$((SECONDS - t0))" "$note"
}

started=$SECONDS

# Sleep/wake (verify/sleep.pml, docs/sleep.md).
check sleep-W2-P2-N2          sleep safety pass  -DW=2 -DP=2 -DN=2
check sleep-W3-P1-N2          sleep safety pass  -DW=3 -DP=1 -DN=2
check sleep-W2-P1-N3-spurious sleep safety pass  -DW=2 -DP=1 -DN=3 -DSPURIOUS
check sleep-BUG               sleep safety bug   -DW=2 -DP=1 -DN=2 -DBUG
check sleep-BUG_NOTIFY        sleep safety bug   -DW=2 -DP=1 -DN=2 -DBUG_NOTIFY
check sleep-BUG_SEARCHER      sleep safety bug   -DW=2 -DP=1 -DN=2 -DBUG_SEARCHER
check sleep-W2-P1-N2-guest    sleep safety pass  -DW=2 -DP=1 -DN=2 -DGUEST
check sleep-W1-P1-N2-guest-spurious sleep safety pass -DW=1 -DP=1 -DN=2 -DGUEST -DSPURIOUS
check sleep-BUG_GUEST         sleep safety bug   -DW=2 -DP=1 -DN=2 -DGUEST -DBUG_GUEST

# Idle detection (verify/idle.pml, docs/waiting.md).
# Without epochs: one count pair per cache, double collect (the destructor's
# wait; pool.wait() before epochs).
check idle-plain              idle safety pass  -DW=2 -DWAITS=1 -DR=1 -DRD=1 -DF=1 -DFD=1
check idle-plain-BUG          idle safety bug   -DW=2 -DWAITS=2 -DR=1 -DRD=1 -DF=1 -DFD=1 -DBUG
check idle-plain-steady-ltl   idle live   bug   -DW=2 -DWAITS=1 -DR=1 -DRD=1 -DF=1 -DFD=0 -DSTEADY -DLIVE
# The epoch design as specified: (1) drain (e+1)&1, (2) flip, (3) drain e&1.
S=(-DEPOCH -DW=2 -DR=1 -DF=1)
check idle-spec               idle safety pass  "${S[@]}" -DPARITY_FLUSH -DWAITS=2 -DFD=0
check idle-spec-BUG           idle safety bug   "${S[@]}" -DPARITY_FLUSH -DWAITS=2 -DFD=1 -DRD=0 -DBUG
check idle-spec-steady-ltl    idle live   pass  "${S[@]}" -DPARITY_FLUSH -DWAITS=1 -DRD=1 -DFD=0 -DSTEADY -DLIVE
check idle-spec-returns-early idle safety error "${S[@]}" -DPARITY_FLUSH -DWAITS=1 -DRD=0 -DFD=1 -DSTEADY -DREACH
check idle-spec-noflush-steady idle safety error "${S[@]}" -DWAITS=1 -DRD=1 -DFD=1 -DSTEADY
check idle-spec-2waiters-steady idle safety error -DEPOCH -DPARITY_FLUSH -DWAITERS=2 -DW=1 -DR=0 -DF=1 -DFD=0 -DNJ=2 -DSTEADY
# The epochs as src/pool.cpp first had them (drain_epochs without a re-read):
# SPIN finds a wait that returns before a job submitted before it began; a
# drain of the reopened parity before each flip is not enough (two waiters,
# two waits each); a submitter that re-reads the epoch after counting, and
# moves its count if the epoch moved, is: that is the code now
# (pool::count_against), checked by the idle-recheck* lines.
C=(-DEPOCH -DDRAIN -DREQ_FLUSH -DW=2 -DR=1 -DF=1)
check idle-code-straggler     idle safety bug   "${C[@]}" -DWAITS=2 -DFD=0
check idle-preflip-2x2        idle safety error -DEPOCH -DDRAIN -DREQ_FLUSH -DDRAIN_FIX -DWAITERS=2 -DWAITS=2 -DW=1 -DR=0 -DF=1 -DFD=0 -DNJ=2
check idle-recheck            idle safety pass  "${C[@]}" -DRECHECK -DWAITS=2 -DRD=0 -DFD=1
check idle-recheck-anyflush   idle safety pass  "${C[@]}" -DRECHECK -DWAITS=1 -DRD=1 -DFD=0 -DANYFLUSH
check idle-recheck-steady     idle safety pass  "${C[@]}" -DRECHECK -DWAITS=1 -DRD=1 -DFD=1 -DSTEADY
check idle-recheck-2waiters-steady idle safety pass -DEPOCH -DDRAIN -DREQ_FLUSH -DRECHECK -DWAITERS=2 -DW=1 -DR=0 -DF=1 -DFD=0 -DNJ=2 -DSTEADY

echo "spin: checks took $((SECONDS - started))s"
echo "spin: $passed passed, $failed failed"
[[ $failed == 0 ]]
