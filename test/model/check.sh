#!/usr/bin/env bash
# Model-checks the Promela models in test/model/ with spin. Each run is
# exhaustive (no bitstate): a "pass" run must finish its search with no
# error, within the depth bound and the memory limit; a "seeded" run (a bug
# put in on purpose) must report an error, or the model has stopped seeing
# bugs; a "known" run is a library bug the model found and the library
# has not yet fixed: it must keep failing the same way (when the fix lands,
# the run fails as "no longer found" and moves to pass, the old code to
# seeded).
#
#   test/model/check.sh [safety|liveness|seeded|known|all] [workdir]
#
# ptimer.pml is the per-P timer protocol; timerthread.pml is the
# TimerThread's sleep/wake protocol; sched_idle.pml is the scheduler's
# idle Ms, the netpoller's claim and the monitor. Each run names its model
# by setting `model` before it (back to ptimer.pml after).
#
# Needs spin and gcc; clang if present (scripts/verify.sh installs spin
# and clang). About three
# minutes on two cores for `all` (a minute of it sched_idle.pml's); see
# README.md for what each run proves.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
group="${1:-all}"
work="${2:-${TMPDIR:-/tmp}/pt-model.$$}"
mkdir -p "$work"
model="$here/ptimer.pml"
command -v spin >/dev/null || { echo "check.sh: spin is not installed (bash scripts/deps.sh spin)" >&2; exit 2; }

DEPTH=200000   # -m: the DFS depth bound; the deepest ptimer.pml run needs
               # ~750, sched_idle.pml's (cyclic: idle Ms go round for
               # ever) ~71000
MEMLIM=3072    # MB: pan stops, and the run fails, past this
JOBS=${PT_MODEL_JOBS:-2}
fails=0
names=()

# one_run KIND NAME "spin -D flags" [ltl claim] [expected error text] [nofair] [gcc -O level]:
# prints one result line; the exit status says whether it was as expected.
# A claim is checked under weak fairness unless the sixth argument is
# "nofair" (pan -f does not report a run that ends in a deadlock; without
# it, such a run stutters in its last state and the claim sees it).
one_run() {
    local fails=0
    local kind=$1 name=$2 flags=$3 claim=${4:-} expect=${5:-} fair=${6:-} opt=${7:--O0}
    local dir="$work/$name"
    rm -rf "$dir" && mkdir -p "$dir"
    local t0=$SECONDS
    (cd "$dir" && spin $flags -a "$model" >spin.log 2>&1) || { echo "FAIL $name: spin -a failed"; cat "$dir/spin.log"; return 1; }
    # -O0: pan.c is 400 KB of generated C; -O2 takes 25 s to compile and
    # saves less than that on most runs here (those that gain pass -O2)
    local cflags="$opt -DCOLLAPSE -DMEMLIM=$MEMLIM" pflags="-m$DEPTH"
    if [ -n "$claim" ] && [ "$fair" = nofair ]; then
        pflags="$pflags -a -N $claim"
    elif [ -n "$claim" ]; then
        cflags="$cflags -DNFAIR=3"
        pflags="$pflags -a -f -N $claim"
    else
        cflags="$cflags -DSAFETY -DNOCLAIM"
    fi
    # at -O0 clang builds pan.c in half gcc's time, and the search runs
    # as fast; gcc builds faster at -O2
    local cc=gcc
    [ "$opt" = -O0 ] && command -v clang >/dev/null && cc="clang -w"
    (cd "$dir" && $cc $cflags -o pan pan.c 2>cc.log) || { echo "FAIL $name: pan did not build"; cat "$dir/cc.log"; return 1; }
    (cd "$dir" && ./pan $pflags >pan.log 2>&1) || true
    local log="$dir/pan.log" errors states
    errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$log" | tail -1)
    states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$log" | tail -1)
    local incomplete=""
    grep -q "max search depth too small" "$log" && incomplete="depth bound reached"
    grep -q "reached -DMEMLIM bound" "$log" && incomplete="memory limit reached"
    local what="${claim:+ltl $claim${fair:+ ($fair)}, }$states states, $((SECONDS - t0)) s"
    case $kind in
    pass)
        if [ "$errors" = 0 ] && [ -z "$incomplete" ]; then
            echo "ok   $name ($what)"
        else
            echo "FAIL $name: ${incomplete:-$errors error(s)} ($what); log and trail in $dir"
            grep -E "violated|acceptance cycle|invalid end" "$log" | head -3
            fails=$((fails+1))
        fi ;;
    seeded|known)
        if [ "${errors:-0}" != 0 ] && { [ -z "$expect" ] || grep -qF "$expect" "$log"; }; then
            echo "ok   $name: caught as expected: $(grep -E "violated|acceptance cycle|invalid end" "$log" | head -1 | sed 's/^pan:1: //')"
        else
            if [ "$kind" = known ]; then
                echo "FAIL $name: the known library bug is no longer found; if it was fixed, move this run to pass"
            else
                echo "FAIL $name: the seeded bug went unnoticed ($what)"
            fi
            fails=$((fails+1))
        fi ;;
    esac
    return $fails
}

# run ...: one_run in the background, at most JOBS at a time; results are
# printed in order by finish.
run() {
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
    names+=("$2")
    mkdir -p "$work/$2"
    ( if one_run "$@" >"$work/$2.result" 2>&1; then echo ok >"$work/$2.status"; else echo fail >"$work/$2.status"; fi ) &
}

# heading TEXT: a group's heading, printed before its results. The groups
# share one pool of JOBS (no wait between them: a group's last long run
# would leave a core idle), so results are printed at the end.
heading() {
    names+=("== $1")
}

finish() {
    wait
    for n in "${names[@]}"; do
        case $n in "== "*) echo "$n"; continue ;; esac
        cat "$work/$n.result"
        [ "$(cat "$work/$n.status" 2>/dev/null)" = ok ] || fails=$((fails+1))
    done
    names=()
}

if [ "$group" = safety ] || [ "$group" = all ]; then
    heading "safety: assertions, heap invariants at every unlock, end state"
    run pass race          ""
    run pass move          "-DCFG_MOVE"
    run pass help          "-DCFG_HELP"
    run pass helpstop      "-DCFG_HELPSTOP"
    run pass sync          "-DCFG_SYNC"
    run pass syncmove      "-DCFG_SYNCMOVE"
    run pass eager         "-DCFG_EAGER"
    run pass eagermove     "-DCFG_EAGER -DCFG_EAGERMOVE"
    model="$here/timerthread.pml"
    run pass tt.destroy   ""
    run pass tt.help      "-DCFG_HELP"
    # the idle Ms, the netpoller's claim and the monitor: 1 M, then 2
    model="$here/sched_idle.pml"
    run pass idle.m1.fd       "-DNM=1 -DEV_FD"
    run pass idle.m1.g_timer  "-DNM=1 -DFDS -DEV_G -DEV_TIMER"
    run pass idle.m1.g_arms   "-DNM=1 -DEV_G -DEV_TIMER -DG_ARMS"
    run pass idle.m2.fds      "-DNM=2 -DFDS"
    run pass idle.m2.fd       "-DNM=2 -DEV_FD -DCFG_NOSPIN"
    run pass idle.m2.g        "-DNM=2 -DEV_G"
    # where wakep's old one-signal flag lost a wake-up (seeded below)
    run pass idle.m1.fd_g     "-DNM=1 -DEV_FD -DEV_G"
    model="$here/ptimer.pml"
fi
if [ "$group" = liveness ] || [ "$group" = all ]; then
    heading "liveness under weak fairness"
    # the two longest first, so the short runs after fill the other core
    # (-O2: 113 s at -O0, 90 s with the compile)
    run pass eager.terminates    "-DCFG_EAGER" terminates "" "" -O2
    # two Ms under weak fairness (without it one M may idle for ever while
    # the other never runs), the monitor's polls left out: the Ms' own
    # non-blocking polls contend for the claim
    # (-O2: 130 s at -O0, some 70 s with the compile)
    model="$here/sched_idle.pml"
    run pass idle.m2.fd.taken    "-DNM=2 -DEV_FD -DCFG_NOSPIN -DMONPOLLS=0 -DNOWATCH" taken "" "" -O2
    model="$here/ptimer.pml"
    run pass race.t0_runs     "" t0_runs
    run pass race.t1_runs     "" t1_runs
    run pass race.terminates  "" terminates
    run pass syncmove.terminates "-DCFG_SYNCMOVE" terminates
    run pass syncmove.t0_runs    "-DCFG_SYNCMOVE" t0_runs
    run pass eagermove.t0_runs   "-DCFG_EAGER -DCFG_EAGERMOVE" t0_runs
    model="$here/sched_idle.pml"
    # no fairness needed (the monitor's polls bounded): every run, fair
    # or not, ends with the work taken, a stall included (see one_run)
    run pass idle.m1.fd.taken    "-DNM=1 -DEV_FD -DMONPOLLS=2 -DNOWATCH" taken "" nofair
    run pass idle.m1.fd_g.taken  "-DNM=1 -DEV_FD -DEV_G -DMONPOLLS=2 -DNOWATCH" taken "" nofair
    model="$here/ptimer.pml"
fi
if [ "$group" = seeded ] || [ "$group" = all ]; then
    heading "seeded bugs: each must be caught"
    run seeded bug_stop_no_cas          "-DBUG_STOP_NO_CAS" "" "assertion violated"
    run seeded bug_no_modified_earliest "-DBUG_NO_MODIFIED_EARLIEST" "" "assertion violated"
    run seeded bug_revive_no_count      "-DBUG_REVIVE_NO_COUNT" "" "assertion violated ((ndel"
    run seeded bug_lock_while_modifying "-DBUG_LOCK_WHILE_MODIFYING" terminates "acceptance cycle"
    run seeded bug_eager_no_recheck     "-DCFG_EAGER -DCFG_EAGERMOVE -DBUG_EAGER_NO_RECHECK" "" "assertion violated"
    # the library's own stop_sync bug, found by this model and fixed in 1618c20
    run seeded bug_stop_sync_no_start_count "-DCFG_SYNCMOVE -DBUG_STOP_SYNC_NO_START_COUNT" "" "assertion violated (cbs[0]==0)"
    # the TimerThread's destroy lost wake-up, found by timerthread.pml, fixed in 2cdb6d0
    model="$here/timerthread.pml"
    run seeded tt.destroy_lost_wakeup "-DBUG_DESTROY_NO_STOP_CHECK" "" "invalid end state"
    # a reclaim request that does not wake the thread
    run seeded tt.reclaim_no_wake "-DBUG_RECLAIM_NO_WAKE" "" "assertion violated"
    # a helper that puts a pending task back without announcing it
    run seeded tt.help_no_announce "-DCFG_HELP -DBUG_HELP_NO_ANNOUNCE" "" "assertion violated"
    # the lost poller before f137c0b (no poll_wanted; a release is a plain
    # store): found by sched_idle.pml, the path in README.md
    model="$here/sched_idle.pml"
    run seeded idle.old_release       "-DNM=1 -DEV_FD -DOLD_RELEASE" "" "assertion violated"
    run seeded idle.old_release.m2    "-DNM=2 -DFDS -DOLD_RELEASE" "" "assertion violated ( !(nfds)||polling)"
    run seeded idle.old_release.taken "-DNM=1 -DEV_FD -DMONPOLLS=2 -DNOWATCH -DOLD_RELEASE" taken "acceptance cycle" nofair
    # the fix done wrong
    run seeded idle.release_order     "-DNM=1 -DFDS -DBUG_RELEASE_ORDER" "" "assertion violated ( !(nfds)||polling)"
    run seeded idle.no_reread         "-DNM=1 -DFDS -DBUG_NO_REREAD" "" "assertion violated ( !(nfds)||polling)"
    run seeded idle.release_wakep     "-DNM=1 -DFDS -DBUG_RELEASE_WAKEP" "" "assertion violated ( !(nfds)||polling)"
    # the poller that sleeps although the parking word moved
    run seeded idle.no_seen_check     "-DNM=1 -DEV_G -DBUG_NO_SEEN_CHECK" "" "assertion violated ((((gq==0)"
    # wakep's one-signal flag as it was: a wakep that joined a signal in
    # flight returned, and that signal, having reached nobody, cleared the
    # flag; an M idle in between slept in the netpoller, a G queued
    run seeded idle.wakep_pending     "-DNM=1 -DEV_FD -DEV_G -DOLD_WAKEP" "" "assertion violated ((((gq==0)"
    # its fix done wrong: the waker re-signals on a flag an M took down
    run seeded idle.waker_loops       "-DNM=1 -DEV_FD -DMONPOLLS=2 -DNOWATCH -DBUG_WAKER_LOOPS" taken "acceptance cycle" nofair
    # the poller that skipped the netpoller when the parking word had moved:
    # two idle Ms pass the claim back and forth, the descriptor never polled
    run seeded idle.seen_skips_poll   "-DNM=2 -DEV_FD -DCFG_NOSPIN -DMONPOLLS=0 -DNOWATCH -DBUG_SEEN_SKIPS_POLL" taken "acceptance cycle"
    model="$here/ptimer.pml"
fi
if [ "$group" = known ] || [ "$group" = all ]; then
    heading "known library bugs: each must still be found"
    # Library bugs the model has found and the library has not fixed yet
    # (none now):
    #   model="$here/<file>.pml"; run known <name> "<-D flags>" "" "<error text>"
fi
finish

if [ $fails -ne 0 ]; then
    echo "model: $fails run(s) failed"
    exit 1
fi
echo "model: all runs as expected"
rm -rf "$work"
