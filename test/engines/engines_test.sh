#!/usr/bin/env bash
# --engine as a user meets it: Seastar's timer set (the example) runs in
# both tools; its copy with a lying stop is caught by name; every engine
# the loader must refuse is said in one line and the other designs keep
# their rows; an engine that crashes or hangs costs its own cells only.
# usage: engines_test.sh PTBENCH PTSTRESS DIR-OF-ENGINES
set -uo pipefail
bench=$1 stress=$2 dir=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect() { # file regex what
    grep -Eq -- "$2" "$1" || { fail "$3: no line matching /$2/ in:"; sed 's/^/    /' "$1"; }
}

# The example in every ptstress scenario, briefly.
"$stress" --engine "$dir/engine-timerset.so" -t 2 -o 1 -T 0.3 -b 1000 -S 1 >"$work/ok" 2>&1
rc=$?
[ $rc = 0 ] || fail "timerset under ptstress: exit $rc"
for s in modtimer ticker churn move; do
    expect "$work/ok" "^PASS timerset $s:" "timerset $s"
done

# Its broken copy: a stop that says it stopped and did not.
"$stress" --engine "$dir/engine-timerset-broken.so" -s modtimer -t 2 -o 1 -T 0.3 -b 1000 -S 1 \
    >"$work/broken" 2>&1
rc=$?
[ $rc = 1 ] || fail "broken timerset: exit $rc, not 1"
expect "$work/broken" "^FAIL timerset-broken modtimer:.* fired-after-stop=[1-9]" "broken stop named"
expect "$work/broken" "reproduce: .*--engine .*engine-timerset-broken.so --design timerset-broken" \
    "the reproduce line loads the engine"

# Refused, one line each, beside a design that runs.
refuse=(abi:"built for engine ABI 2" size:"rebuild it against"
        no-cancel:"required ops missing: cancel" clash:"the name is taken"
        no-entry:"no pt_engine_v1 in it")
args=()
for r in "${refuse[@]}"; do args+=(--engine "$dir/engine-${r%%:*}.so"); done
printf 'not an ELF file\n' >"$work/text.so"
args+=(--engine "$work/text.so")
"$stress" "${args[@]}" -d pheap -s churn -t 2 -o 1 -T 0.2 -b 1000 -S 1 >"$work/refused" 2>&1
rc=$?
[ $rc = 1 ] || fail "ptstress with refused engines: exit $rc, not 1"
for r in "${refuse[@]}"; do
    expect "$work/refused" "^ptstress: --engine .*engine-${r%%:*}.so: .*${r#*:}" "refused ${r%%:*}"
done
expect "$work/refused" "^ptstress: --engine .*text.so: cannot be loaded" "refused a text file"
expect "$work/refused" "^PASS pheap churn:" "pheap still runs beside refused engines"
[ "$(grep -c '^ptstress: --engine' "$work/refused")" = 6 ] || fail "not one line per refused engine"

"$bench" "${args[@]}" -d pheap -w rpc -t 1 -r 1 -D 50 --preload 100 --no-peers --no-plots -q \
    -o "$work/bench-refused" >"$work/brefused" 2>&1
rc=$?
[ $rc = 1 ] || fail "ptbench with refused engines: exit $rc, not 1"
for r in "${refuse[@]}"; do
    expect "$work/brefused" "^ptbench: --engine .*engine-${r%%:*}.so: .*${r#*:}" "ptbench refused ${r%%:*}"
done
expect "$work/bench-refused/ptbench.jsonl" '"design":"pheap"' "pheap's row kept"

# A crash and a hang inside ptstress: a verdict for the cell, the next runs.
"$stress" --engine "$dir/engine-crash.so" -d pheap -s churn,modtimer -t 2 -o 1 -T 0.3 -b 1000 -S 1 \
    >"$work/crash" 2>&1
rc=$?
[ $rc = 1 ] || fail "crashing engine: exit $rc, not 1"
expect "$work/crash" "^CRASH faulty-crash churn: (killed by SIGSEGV|died without a verdict[^;]*); rerun: .*--engine .*engine-crash.so -d faulty-crash -s churn" "crash named with its rerun"
expect "$work/crash" "(CRASH|PASS|FAIL) faulty-crash modtimer" "the next cell ran"
expect "$work/crash" "^PASS pheap churn:" "pheap unharmed by the crash"
"$stress" --engine "$dir/engine-hang.so" -s churn -t 2 -o 1 -T 0.3 -b 1000 -S 1 --hang-s 2 \
    >"$work/hang" 2>&1
rc=$?
[ $rc = 1 ] || fail "hanging engine: exit $rc, not 1"
expect "$work/hang" "(^FAIL faulty-hang churn:.*hung=1|^HANG faulty-hang churn)" "hang named"

# A design without timer objects: churn runs on it, the rest are skipped,
# said; named with -d as well.
"$stress" --engine "$dir/engine-no-tm.so" -d faulty-no-tm -t 2 -o 1 -T 0.3 -b 1000 -S 1 \
    >"$work/notm" 2>&1
rc=$?
[ $rc = 0 ] || fail "an engine without timer objects: exit $rc, not 0"
expect "$work/notm" "^PASS faulty-no-tm churn:" "churn on an engine without timer objects"
expect "$work/notm" "^SKIP faulty-no-tm modtimer: .*no timer objects" "modtimer skipped, said"

# A hang inside ptbench, in a repetition of its own process and in the
# memory workload's fresh one: killed, its rows left out.
"$bench" --engine "$dir/engine-hang.so" -d pheap -w rpc,memory -t 1 -r 1 -D 50 --preload 100 \
    --memory-timers 10000 --hang-s 2 --no-peers --no-plots -q -o "$work/bench-hang" \
    >"$work/bhang" 2>&1
rc=$?
[ $rc = 1 ] || fail "ptbench with a hanging engine: exit $rc, not 1"
expect "$work/bhang" "rpc, faulty-hang, 1 thread: hung" "ptbench names the hang"
expect "$work/bhang" "memory, faulty-hang, 1 thread: failed in its own process" "the memory hang"
expect "$work/bench-hang/ptbench.jsonl" '"design":"pheap","workload":"memory"' "pheap's memory row kept"

# A crash inside ptbench: that design's rows are left out, not the run's.
"$bench" --engine "$dir/engine-crash.so" -d pheap -w rpc,reset -t 1 -r 1 -D 50 --preload 100 \
    --no-peers --no-plots -q -o "$work/bench-crash" >"$work/bcrash" 2>&1
rc=$?
[ $rc = 1 ] || fail "ptbench with a crashing engine: exit $rc, not 1"
expect "$work/bcrash" "rpc, faulty-crash, 1 thread: (crashed: killed by signal 11|died: exit status)" "ptbench names the crash"
for w in rpc reset; do
    grep -q "\"workload\":\"$w\".*\"design\":\"pheap\"\|\"design\":\"pheap\".*\"workload\":\"$w\"" \
        "$work/bench-crash/ptbench.jsonl" || fail "pheap's $w row lost to the crash"
done
# (its reset row may stand: reset arms few timers, and the 2000th never comes)
if grep '"design":"faulty-crash"' "$work/bench-crash/ptbench.jsonl" | grep -q '"workload":"rpc"'; then
    fail "the crashed design has an rpc row"
fi

# And a good one in ptbench: a row like any design's.
"$bench" --engine "$dir/engine-timerset.so" -d pheap -w rpc -t 1 -r 1 -D 50 --preload 100 \
    --no-peers --no-plots -q -o "$work/bench-ok" >"$work/bok" 2>&1 || fail "ptbench with timerset: exit $?"
expect "$work/bench-ok/ptbench.jsonl" '"design":"timerset"' "timerset's row"

[ $fails = 0 ] && echo "engines: ok" || { echo "$fails checks failed"; exit 1; }
