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
runs() { # output-file exit-status what command...: runs it, its exit status checked
    local out=$1 want=$2 what=$3
    shift 3
    "$@" >"$out" 2>&1
    local rc=$?
    [ $rc = "$want" ] || fail "$what: exit $rc, not $want"
}
expect() { # file regex what
    grep -Eq -- "$2" "$1" || { fail "$3: no line matching /$2/ in:"; sed 's/^/    /' "$1"; }
}
stress() { "$stress" -t 2 -o 1 -b 1000 -S 1 "$@"; }
bench() { "$bench" -t 1 -r 1 -D 50 --preload 100 --no-peers --no-plots -q "$@"; }

# The example in every ptstress scenario, briefly.
runs "$work/ok" 0 "timerset under ptstress" stress --engine "$dir/engine-timerset.so" -T 0.3
for s in modtimer ticker churn move; do
    expect "$work/ok" "^PASS timerset $s:" "timerset $s"
done

# Its broken copy: a stop that says it stopped and did not.
runs "$work/broken" 1 "broken timerset" stress --engine "$dir/engine-timerset-broken.so" \
    -s modtimer -T 0.3
expect "$work/broken" "^FAIL timerset-broken modtimer:.* fired-after-stop=[1-9]" "broken stop named"
expect "$work/broken" "reproduce: .*--engine .*engine-timerset-broken.so --design timerset-broken" \
    "the reproduce line loads the engine"

# Refused, one line each, beside a design that runs.
refuse=(abi:"built for engine ABI 3" size:"rebuild it against"
        no-cancel:"required ops missing: cancel" clash:"the name is taken"
        no-entry:"no pt_engine_v2 in it")
args=()
for r in "${refuse[@]}"; do args+=(--engine "$dir/engine-${r%%:*}.so"); done
printf 'not an ELF file\n' >"$work/text.so"
args+=(--engine "$work/text.so")
refused() { # tool output-file: each refused in one line
    for r in "${refuse[@]}"; do
        expect "$2" "^$1: --engine .*engine-${r%%:*}.so: .*${r#*:}" "$1 refused ${r%%:*}"
    done
    expect "$2" "^$1: --engine .*text.so: cannot be loaded" "$1 refused a text file"
    [ "$(grep -c "^$1: --engine" "$2")" = 6 ] || fail "$1: not one line per refused engine"
}
runs "$work/refused" 1 "ptstress with refused engines" stress "${args[@]}" -d pheap -s churn -T 0.2
refused ptstress "$work/refused"
expect "$work/refused" "^PASS pheap churn:" "pheap still runs beside refused engines"
runs "$work/brefused" 1 "ptbench with refused engines" bench "${args[@]}" -d pheap -w rpc \
    -o "$work/bench-refused"
refused ptbench "$work/brefused"
expect "$work/bench-refused/ptbench.jsonl" '"design":"pheap"' "pheap's row kept"

# A crash and a hang inside ptstress: a verdict for the cell, the next runs.
runs "$work/crash" 1 "crashing engine" stress --engine "$dir/engine-crash.so" -d pheap \
    -s churn,modtimer -T 0.3
expect "$work/crash" "^CRASH faulty-crash churn: (killed by SIG[A-Z]+|died without a verdict[^;]*); rerun: .*--engine .*engine-crash.so -d faulty-crash -s churn" "crash named with its rerun"
expect "$work/crash" "(CRASH|PASS|FAIL) faulty-crash modtimer" "the next cell ran"
expect "$work/crash" "^PASS pheap churn:" "pheap unharmed by the crash"
# (-b 100: the watchdog allows twenty bounds past --hang-s, 20 s at -b 1000)
runs "$work/hang" 1 "hanging engine" stress --engine "$dir/engine-hang.so" -d faulty-hang -s churn \
    -T 0.3 --hang-s 2 -b 100
expect "$work/hang" "(^FAIL faulty-hang churn:.*hung=1|^HANG faulty-hang churn)" "hang named"

# A design without timer objects: churn runs on it, the rest are skipped,
# said; named with -d as well.
runs "$work/notm" 0 "an engine without timer objects" stress --engine "$dir/engine-no-tm.so" \
    -d faulty-no-tm -T 0.3
expect "$work/notm" "^PASS faulty-no-tm churn:" "churn on an engine without timer objects"
expect "$work/notm" "^SKIP faulty-no-tm modtimer: .*no timer objects" "modtimer skipped, said"

# An engine built for ABI 1 (pt_engine_v1, no set_slack) still loads and
# runs; what needs a window leaves it out, said.
runs "$work/v1" 0 "an ABI 1 engine" stress --engine "$dir/engine-v1.so" -d faulty-v1 -s modtimer \
    -T 0.3
expect "$work/v1" "^PASS faulty-v1 modtimer:" "an ABI 1 engine runs"
runs "$work/v1s" 0 "an ABI 1 engine under --slack" stress --engine "$dir/engine-v1.so" \
    -d faulty-v1 -s modtimer -T 0.3 --slack 2
expect "$work/v1s" "^SKIP faulty-v1 modtimer: --slack: the design has no set_slack" \
    "--slack skips an ABI 1 engine, said"
runs "$work/v1b" 0 "ptbench's slack beside an ABI 1 engine" bench --engine "$dir/engine-v1.so" \
    -d pheap -w slack --slacks 0 --slack-tickers 100 --slack-ms 200 -o "$work/bench-v1"
expect "$work/bench-v1/table.txt" "slack: faulty-v1 left out: it has no set_slack" \
    "slack leaves an ABI 1 engine out, said"
expect "$work/bench-v1/ptbench.jsonl" '"design":"pheap","workload":"slack"' "pheap's slack row kept"

# A hang inside ptbench, in a repetition of its own process and in the
# memory workload's fresh one: killed, its rows left out.
runs "$work/bhang" 1 "ptbench with a hanging engine" bench --engine "$dir/engine-hang.so" -d pheap \
    -w rpc,memory --memory-timers 10000 --hang-s 2 -o "$work/bench-hang"
expect "$work/bhang" "rpc, faulty-hang, 1 thread: hung" "ptbench names the hang"
expect "$work/bhang" "memory, faulty-hang, 1 thread: failed in its own process" "the memory hang"
expect "$work/bench-hang/ptbench.jsonl" '"design":"pheap","workload":"memory"' "pheap's memory row kept"

# A crash inside ptbench: that design's rows are left out, not the run's.
runs "$work/bcrash" 1 "ptbench with a crashing engine" bench --engine "$dir/engine-crash.so" \
    -d pheap -w rpc,reset -o "$work/bench-crash"
expect "$work/bcrash" "rpc, faulty-crash, 1 thread: (crashed: killed by signal [0-9]+|died: exit status)" "ptbench names the crash"
for w in rpc reset; do
    grep -q "\"design\":\"pheap\",\"workload\":\"$w\"" "$work/bench-crash/ptbench.jsonl" ||
        fail "pheap's $w row lost to the crash"
done
# (its reset row may stand: reset arms few timers, and the 2000th never comes)
if grep '"design":"faulty-crash"' "$work/bench-crash/ptbench.jsonl" | grep -q '"workload":"rpc"'; then
    fail "the crashed design has an rpc row"
fi

# And a good one in ptbench: a row like any design's.
runs "$work/bok" 0 "ptbench with timerset" bench --engine "$dir/engine-timerset.so" -d pheap -w rpc \
    -o "$work/bench-ok"
expect "$work/bench-ok/ptbench.jsonl" '"design":"timerset"' "timerset's row"

[ $fails = 0 ] && echo "engines: ok" || { echo "$fails checks failed"; exit 1; }
