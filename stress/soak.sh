#!/usr/bin/env bash
# The soak: every design, each of its scenarios in turn, one run at a time
# so that each has the machine to itself, the design's time shared among
# its scenarios. Writes its own report, a new dated file in bench/journal
# (or -o FILE): the commit, the command, and each run's verdict line;
# exit status 1 if any run failed.
#   stress/soak.sh [-m MINUTES] [-d DESIGNS] [-o FILE] [-S SEED]
#     -m  minutes per design (default 60)
#     -d  designs, comma-separated (default: every design ptstress has)
#     -o  where the report goes (default bench/journal/DATE-soak-COMMIT.md,
#         never an existing file; - for stdout)
#     -S  first seed (default: from the clock); each run takes the next
# Run it on a quiet machine: another benchmark alongside is a late timer.
set -euo pipefail
cd "$(dirname "$0")/.."

MIN=60
DESIGNS=pheap,pheap-sync,pheap-staged,pwheel,lheap,timerthread,globalheap,floor,sched-perp,sched-lheap,sched-tt
OUT=
SEED=$(date +%s)
while getopts "m:d:o:S:" o; do
  case $o in
    m) MIN=$OPTARG ;;
    d) DESIGNS=$OPTARG ;;
    o) OUT=$OPTARG ;;
    S) SEED=$OPTARG ;;
    *) sed -n '2,12p' "$0"; exit 2 ;;
  esac
done

bash scripts/deps.sh
cmake -S . -B build-soak -DCMAKE_BUILD_TYPE=Release -DPT_BUILD_TESTS=OFF >/dev/null
cmake --build build-soak -j"$(nproc)" --target ptstress >/dev/null
bin=build-soak/stress/ptstress

commit=$(git rev-parse --short HEAD)
dirty=$(git status --porcelain --untracked-files=no | grep -q . && echo " (with uncommitted changes)" || true)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=0
{
  echo "# $(date -u +%Y-%m-%d): soak at $commit$dirty, $MIN min per design"
  echo
  echo "\`stress/soak.sh -m $MIN -d $DESIGNS -S $SEED\` on $(nproc) cores; each line is one"
  echo "run's verdict (its seed, threads and duration in it)."
  echo
  echo '```'
} >"$log"
seed=$SEED
for d in ${DESIGNS//,/ }; do
  case $d in
    sched-*) scen=(sched) ;;
    pheap* | pwheel | lheap) scen=(modtimer ticker churn move) ;;
    *) scen=(modtimer ticker churn) ;;
  esac
  secs=$((MIN * 60 / ${#scen[@]}))
  for s in "${scen[@]}"; do
    out=$("$bin" --design "$d" --scenario "$s" --duration "$secs" --seed "$seed" 2>&1) || true
    line=$(grep -E '^(PASS|FAIL|SKIP)' <<<"$out" | tail -1) || true
    [ -n "$line" ] || line="FAIL $d $s: no verdict (seed $seed)"
    echo "$line" | tee -a "$log"
    if [[ $line != PASS* && $line != SKIP* ]]; then
      failed=1
      # the first violations it printed, to say what went wrong
      # (each with the machine-stall witness's line, where it has one)
      grep -E '^ +(violation|witness)' <<<"$out" | head -6 | sed 's/^ */    /' | tee -a "$log" || true
    fi
    seed=$((seed + 1))
  done
done
echo '```' >>"$log"
if [ "$OUT" = - ]; then
  cat "$log"
else
  if [ -z "$OUT" ]; then
    OUT=bench/journal/$(date -u +%Y-%m-%d)-soak-$commit.md
    n=2
    while [ -e "$OUT" ]; do OUT=bench/journal/$(date -u +%Y-%m-%d)-soak-$commit-$n.md; n=$((n + 1)); done
  fi
  [ -e "$OUT" ] && { echo "soak.sh: $OUT exists; the report is not appended to it" >&2; OUT=/dev/stdout; }
  cat "$log" >"$OUT"
  echo "soak.sh: the report is in $OUT" >&2
fi
exit $failed
