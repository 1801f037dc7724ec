#!/usr/bin/env bash
# Proof that ptstress catches bugs: copy the sources to a temporary
# directory, apply one seeded mistake at a time (sed), rebuild ptstress
# there (one build; a mutation recompiles its file) and run it briefly per
# scenario; print a mutation x scenario table.
#   stress/mutate.sh [-T SEC] [-d DESIGNS] [-m NAMES] [-f] [-k]
#     -T  seconds per scenario run (default 1)
#     -d  designs to run each scenario against (default pheap,pheap-sync;
#         the sched scenario runs on sched-perp and sched-tt, and on
#         sched-lheap for the lheap mutations)
#     -m  only these mutations (comma-separated names)
#     -f  fast: no scenario runs once one has caught the mutation (CI)
#     -k  keep the temporary directory (each mutation's logs and its
#         mutated file; the one build there holds the last mutation)
# A cell is "caught" (a named violation, whether the run then ended with
# its verdict or the library aborted on the state the bug left), "crash"
# (only the library's abort on a status it found corrupt, a signal or a
# hang, on every design), "-" (passed), or "." (not run: -f, caught
# already). A mutation must be caught as a named violation by
# some scenario: one only the library's own abort saw is a gap in the
# oracles, and fails the run as a miss does. A run the library aborted
# before its time with no violation named gives the rest of the cell's
# time to the next seed (up to 20 runs): the abort, not the oracle, ended it.
# Exit status 1 if some mutation is caught by no scenario as a violation,
# or a mutation no longer applies (its sed matched nothing: the source
# moved on).
set -euo pipefail

T=1
DESIGNS=pheap,pheap-sync
ONLY=
KEEP=0
FAST=0
while getopts "T:d:m:fk" o; do
  case $o in
    T) T=$OPTARG ;;
    d) DESIGNS=$OPTARG ;;
    m) ONLY=$OPTARG ;;
    f) FAST=1 ;;
    k) KEEP=1 ;;
    *) sed -n '2,27p' "$0"; exit 2 ;;
  esac
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
mutated= # the file a mutation is in now, put back on any exit
trap '[ -z "$mutated" ] || cp "$TMP/orig" "$TMP/src/$mutated"; [ "$KEEP" = 1 ] || rm -rf "$TMP"' EXIT
JOBS=${JOBS:-2}

# name # file # sed expression (tt-*: run against timerthread; lheap-*: lheap;
# pwheel-*: pwheel; staged-*: pheap-staged)
MUTATIONS=(
  "stop-skips-cas#pheap/timer.c#s/if (!st_pending(st_step(t, \&w, stop_rows, \"stop\")))/if (!st_pending(st_status(w)))/; s/    st_set(t, PT_TIMER_MODIFYING, PT_TIMER_DELETED, \"stop\");/    atomic_store(\&t->state, w ^ (st_status(w) ^ PT_TIMER_DELETED));/"
  "revive-keeps-deleted-count#pheap/timer.c#/if (s == PT_TIMER_DELETED)\$/{n;s/atomic_fetch_sub_explicit(.*);/(void)0;/}"
  "deleted-timer-fired#pheap/timers.c#s/            retire_deleted(ts, t, w, NULL, \"run\");/            if (key <= now \&\& st_cas(t, w, PT_TIMER_RUNNING)) { run_one(ts, t, key, now); return 0; } retire_deleted(ts, t, w, NULL, \"run\");/"
  "modified-earliest-kept-when-empty#pheap/heap_locked.h#s/    if (ts->heap.len + ts->staged == 0)\$/    if (0)/; s/        if (ts->heap.len + ts->staged == 1)\$/        if (0)/"
  "ticker-refires-missed#pheap/timers.c#s/pt_nanos missed = (now - key) \/ t->period, step, next;/pt_nanos missed = 0 * (now - key), step, next;/"
  "stop-sync-no-wait#pheap/timer.c#/^static void wait_callbacks/,/^{/s/^{/{ if (mine != ~0u) return;/"
  "tt-unschedule-ignores-version#timerthread/timerthread.c#s/    uint32_t seen = v;/    uint32_t seen = atomic_load(\&t->version); v = seen \& ~1u;/"
  "no-wake-on-new-earliest#pheap/timer.c#s/if (ts->wake \&\& (prev == 0 || when < prev))/if (0 \&\& ts->wake)/; s/^    if (wake)\$/    if (0 \&\& wake)/"
  "sched-stop-keeps-unread-value#sched/time.c#s/if (t->c \&\& !empty \&\& pt__chan_drain(t->c))/if (0)/"
  "sched-timer-due-at-half#sched/time.c#s/__builtin_add_overflow(now, d, \&w)/__builtin_add_overflow(now, d \/ 2, \&w)/"
  "sched-idle-m-parks-instead-of-polling#sched/proc.c#/^static bool claim_poller/,/^}/s/return true;/return false;/"
  "lheap-stop-leaves-no-zombie#lheap/lheap.c#/^static int stop_locked/,/^}/s/            t->state |= ZOMBIE;/            (void)0;/"
  "lheap-modify-keeps-the-old-key#lheap/lheap.c#/^static int rearm/,/^}/s/^        t->state |= MODIFIED;\$/        (void)0;/"
  "sched-afterfunc-armed-early#sched/time.c#/^static int arm(/,/^}/s/        return engine_arm(t, when);/        return engine_arm(t, when - 500000);/"
  "sched-select-times-out-early#sched/select.c#s/pt__park_until(g, unlock_all_commit, w, deadline)/pt__park_until(g, unlock_all_commit, w, deadline ? deadline - 500000 : 0)/"
  "move-drops-the-period#pheap/timers.c#s/^        to->v\[to->len\].item = t;\$/        to->v[to->len].item = t; t->period = 0;/"
  "lheap-move-keys-by-the-stale-copy#lheap/lheap.c#/^int pt_lheap_move/,/^}/s/^            t->when_heap = t->when;\$/            (void)0;/"
  "start-replaces-a-pending-arming#pheap/timer.c#/^int pt_timer_start/,/^}/s/ARM_START/ARM_RESET/"
  "tt-unschedule-calls-running-removed#timerthread/timerthread.c#s/        return seen == v + 1 ? 1 : -1;/        return seen == v + 1 ? 0 : -1;/"
  "pwheel-level0-runs-the-whole-slot#pwheel/levels.c#s/refile(w, \&w->slot\[idx\], lvl == 0 ? now : -1);/refile(w, \&w->slot[idx], lvl == 0 ? PT_MAXWHEN : -1);/"
  "ticker-slides-from-the-check#pheap/timers.c#s/__builtin_add_overflow(key, step, \&next))/__builtin_add_overflow(now, t->period + 0 * step, \&next))/"
  "lheap-ticker-skips-every-other-tick#lheap/lheap.c#s/    pt_nanos k = 1 + (now > when/    pt_nanos k = 2 + (now > when/"
  "pwheel-ticker-slides-from-the-check#pwheel/pwheel.c#s/t->when = ticker_next(t->when, t->period, now);/t->when = ticker_next(now, t->period, now);/"
  "sched-ticker-slides-from-the-poll#sched/time.c#/^static pt_nanos next_tick/,/^}/s/__builtin_add_overflow(due, step, \&next)/__builtin_add_overflow(now, period + 0 * step, \&next)/"
  "sched-ticker-skips-a-tick-it-owes#sched/time.c#/^static pt_nanos next_tick/,/^}/s/__builtin_mul_overflow(missed + 1, period/__builtin_mul_overflow(missed + 2, period/"
  "sched-ring-fills-its-cq-and-never-drains#sched/fdring.c#s/ > r->cq_room \&\& !admit_all()) {/ > r->cq_room \&\& 0) {/; s/        if (!io_uring_cq_has_overflow(\&r->ring))\$/        if (1)/"
  "staged-slot-promoted-at-its-end#pheap/stage.c#/^bool pt__stage_push/,/^}/s/        pt_nanos at = s << st->shift;/        pt_nanos at = (s + 1) << st->shift;/"
  "sched-untimed-read-times-out#sched/fdio.c#/^static ssize_t do_read/,/^}/s/ring_call(\&u, deadline)/ring_call(\&u, deadline ? deadline : pt_nanotime() + 2000000)/; /^ssize_t pt_fd_read/,/^}/s/wait_side(f, PT__FD_RD, seen, deadline)/wait_side(f, PT__FD_RD, seen, deadline ? deadline : pt_nanotime() + 2000000)/"
  "sched-timed-read-times-out-late#sched/fdio.c#/^static ssize_t do_read/,/^}/s/ring_call(\&u, deadline)/ring_call(\&u, deadline ? deadline + 300000000 : 0)/; /^ssize_t pt_fd_read/,/^}/s/wait_side(f, PT__FD_RD, seen, deadline)/wait_side(f, PT__FD_RD, seen, deadline ? deadline + 300000000 : 0)/"
  "sched-timed-write-times-out-early#sched/fdio.c#/^static ssize_t do_write/,/^}/s/ring_call(\&u, deadline)/ring_call(\&u, deadline ? deadline - 500000 : 0)/; /^static int write_segments/,/^}/s/wait_side(f, PT__FD_WR, seen, deadline)/wait_side(f, PT__FD_WR, seen, deadline ? deadline - 500000 : 0)/"
  "sched-timed-accept-times-out-early#sched/fdio.c#/^int pt_fd_accept/,/^}/s/wait_side(f, PT__FD_RD, seen, deadline)/wait_side(f, PT__FD_RD, seen, deadline ? deadline - 500000 : 0)/"
  "sched-plain-sleep-until-wakes-early#sched/sleep.c#s/struct timespec ts = {when \/ 1000000000, when % 1000000000};/struct timespec ts = {(when - 1000000) \/ 1000000000, (when - 1000000) % 1000000000};/"
  "sched-plain-sleep-does-not-sleep#sched/sleep.c#/^int pt_sleep(/,/^}/s/        return pt_sleep_until(when);/        return 0;/"
  "sched-timer-quiet-when-one-waiter-leaves#sched/time.c#/^void pt__time_chan_unblock/,/^}/s/memory_order_relaxed) == 1;/memory_order_relaxed) >= 1;/"
  "sched-vtime-jumps-past-the-timer#sched/vtime.c#s/atomic_store_explicit(\&s->vt.now, next, memory_order_release);/atomic_store_explicit(\&s->vt.now, next + 1, memory_order_release);/"
  "sched-vtime-fd-wait-is-durable#sched/fdio.c#s/pt__g_waits(w.g, PT__WAIT_FD, f, false);/pt__g_waits(w.g, PT__WAIT_FD, f, true);/"
)
SCENARIOS=(modtimer ticker churn move sched vtime)

# A clean copy of the tree once; each mutation edits it in place and puts
# the file back (on any exit too, so a kept tree is the clean one).
mkdir -p "$TMP/src"
(cd "$ROOT" && git ls-files -z | xargs -0 cp --parents -t "$TMP/src")
# the unmutated build, once; each mutation then rebuilds only its file
cmake -S "$TMP/src" -B "$TMP/build" -DCMAKE_BUILD_TYPE=Release -DPT_BUILD_TESTS=OFF \
  -DPT_WERROR=OFF >/dev/null
cmake --build "$TMP/build" -j"$JOBS" --target ptstress >"$TMP/build.log" 2>&1 ||
  { echo "mutate.sh: the unmutated sources do not build ($TMP/build.log)" >&2; cat "$TMP/build.log" >&2; exit 2; }

printf '%-36s' "mutation"
for s in "${SCENARIOS[@]}"; do printf ' %-9s' "$s"; done
printf '\n'
missed=0
for m in "${MUTATIONS[@]}"; do
  IFS='#' read -r name file expr <<<"$m"
  if [ -n "$ONLY" ] && [[ ",$ONLY," != *",$name,"* ]]; then continue; fi
  dir=$TMP/$name # its logs
  rm -rf "$dir" && mkdir -p "$dir"
  # One tree, one build: the mutation goes into the file, the build
  # recompiles that file alone, and the file is put back after the runs.
  cp "$TMP/src/$file" "$TMP/orig"
  mutated=$file
  sed -i "$expr" "$TMP/src/$file"
  if cmp -s "$TMP/orig" "$TMP/src/$file"; then
    printf '%-36s (no longer applies: %s unchanged)\n' "$name" "$file"
    cp "$TMP/orig" "$TMP/src/$file"
    mutated=
    missed=1
    continue
  fi
  cp "$TMP/src/$file" "$dir/mutated-$(basename "$file")"
  if ! cmake --build "$TMP/build" -j"$JOBS" --target ptstress >"$dir/build.log" 2>&1; then
    printf '%-36s (does not build: %s/build.log)\n' "$name" "$dir"
    cp "$TMP/orig" "$TMP/src/$file"
    mutated=
    missed=1
    continue
  fi
  caught_any=0 named=0
  printf '%-36s' "$name"
  for s in "${SCENARIOS[@]}"; do
    if [ "$FAST" = 1 ] && [ "$named" = 1 ]; then
      printf ' %-9s' .
      continue
    fi
    cell=-
    designs=$DESIGNS
    [[ $name == tt-* ]] && designs=timerthread
    [[ $name == lheap-* ]] && designs=lheap
    [[ $name == pwheel-* ]] && designs=pwheel
    [[ $name == staged-* ]] && designs=pheap-staged
    if [ "$s" = sched ] || [ "$s" = vtime ]; then
      designs=sched-perp,sched-tt
      [[ $name == tt-* ]] && designs=sched-tt
      [[ $name == lheap-* ]] && designs=sched-lheap
    fi
    for d in ${designs//,/ }; do
      log=$dir/$s.$d.log
      seed=1 crashed=
      began=$EPOCHREALTIME
      while :; do
        rc=0
        # In a subshell whose stderr is dropped (the exit keeps it from
        # exec'ing the run): a run the mutation makes abort is a cell of the
        # table, not a shell message across it.
        (timeout -k 5 $((${T%.*} + 90)) "$TMP/build/stress/ptstress" --design "$d" --scenario "$s" \
          --threads 2 --outsiders 1 --duration "$T" --seed "$seed" >"$log" 2>&1; exit $?) \
          2>/dev/null || rc=$?
        [ "$rc" = 0 ] || grep -q '^SKIP' "$log" && break
        # ptstress prints each violation as it sees it: a run that names one
        # caught the bug, whether it then ended with its verdict (exit 1) or
        # the library aborted on the state the bug left behind.
        kinds=$({ grep -o '^FAIL.*violations [^(]*' "$log" || true; } | sed 's/.*violations //' | head -1)
        [ -n "$kinds" ] || kinds=$({ grep -o '^  violation [a-z-]*' "$log" || true; } |
          sed 's/.*violation //' | sort | uniq -c | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1}')
        if [ -n "$kinds" ]; then
          [ "$rc" = 1 ] && how= || how=" (then exit $rc: $(grep -m1 'ptimer:' "$log" || true))"
          [ "$seed" = 1 ] || how="$how (seed $seed)"
          echo "$name $s $d: $kinds$how" >>"$TMP/kinds.txt"
          cell=caught
          break
        fi
        # Only the library's abort, a signal or a hang. An abort that ended
        # the run before its time cut the oracles' look short: the rest of
        # the cell's time goes to the next seed (20 runs at most).
        cell=crash
        crashed="exit $rc: $(grep -m1 'ptimer:' "$log" || true)"
        if [ "$seed" -lt 20 ] &&
           awk -v a="$began" -v b="$EPOCHREALTIME" -v t="$T" 'BEGIN { exit !(b - a < t) }'; then
          seed=$((seed + 1))
          continue
        fi
        break
      done
      # caught here; else another design may still name it
      [ "$cell" = caught ] && break
      [ -z "$crashed" ] || echo "$name $s $d: $seed runs, the last $crashed" >>"$TMP/kinds.txt"
    done
    [ "$cell" != - ] && caught_any=1
    [ "$cell" = caught ] && named=1
    printf ' %-9s' "$cell"
  done
  printf '\n'
  if [ "$named" != 1 ]; then
    missed=1
    [ "$caught_any" = 1 ] && echo "$name: only the library's own abort saw it (a gap in the oracles)" >>"$TMP/gaps.txt"
    [ "$caught_any" = 1 ] || echo "$name: caught by no scenario" >>"$TMP/gaps.txt"
  fi
  cp "$TMP/orig" "$TMP/src/$file"
  mutated=
  [ "$KEEP" = 1 ] || rm -rf "$dir"
done
if [ -f "$TMP/kinds.txt" ]; then
  echo
  echo "what each caught cell saw:"
  cat "$TMP/kinds.txt"
fi
if [ -f "$TMP/gaps.txt" ]; then
  echo
  echo "not caught as a violation:"
  cat "$TMP/gaps.txt"
fi
exit $missed
