/* ptimer.pml: the per-P timer protocol of pheap/timer.c and pheap/timers.c
 * as a Promela model, checked with spin. README.md beside this file maps
 * every inline and process here to the C function it stands for; the rows
 * named in comments are the rows of the status table in ptimer.h.
 *
 * What is modelled: two Ps (heaps), two timers, the status word and every
 * CAS and release store on it, the heap lock, the lock-free atomics
 * (timer0_when, modified_earliest, num_timers, deleted_timers, running),
 * the owner's clean / adjust / run / clear_deleted, stop, reset/modify and
 * stop_sync from other threads, moveTimers, a non-owner check, and the
 * callback (with the lock dropped, optionally re-arming its own timer).
 * Each access to shared state is its own step, as in the C, except heap
 * array surgery, which only the lock holder does and nobody reads without
 * the lock (so it is one step).
 *
 * What is abstracted: the heap is a set (the head is the entry with the
 * least key; ties go to the lower slot), so heap order and indices are
 * checked by the C tests and the fuzzer instead; time is 1..MAXT plus NEVER
 * (PT_MAXWHEN); one-shot timers only (ticker arithmetic is fuzzed);
 * memory is sequentially consistent (the C's acquire/release pairs are
 * checked by ThreadSanitizer, not here); allocation never fails (the fault
 * injection tests cover -ENOMEM); the futex sleep in stop_sync is a
 * blocking guard; the wake callback is not modelled.
 *
 * Configurations (spin -D...):
 *   (default)  RACE: T0 on P0 raced by a modifier (re-arms it, onto P1 if it
 *              is in no heap), a stopper (stops T1 then T0), moveTimers
 *              P0 -> P1, a non-owner check of P0, both owners checking,
 *              and a callback that may reset its own timer.
 *   CFG_SYNC   stop_sync of T0 against the owner running it, a callback
 *              that resets its own timer, a non-owner check and a move.
 *   CFG_EAGER  the heaps are staged (pt_timers_set_staging): the stopper's
 *              stops try the eager unlink first (row "stop, eager"); with
 *              CFG_EAGERMOVE, against a move instead of the modifier. The
 *              ring itself is heap layout, not protocol: its entries are
 *              entries of the set below.
 *   BUG_EAGER_NO_RECHECK   the eager stop does not check again, under the
 *                          lock, that the timer is still in the heap it
 *                          locked (a move took it meanwhile)
 * Seeded bugs (each must be caught; check.sh fails if one is not):
 *   BUG_STOP_NO_CAS        stop claims the status with a load and a plain
 *                          store instead of a CAS
 *   BUG_NO_MODIFIED_EARLIEST  modify to an earlier time does not lower
 *                          modified_earliest (Go issue 41699's invariant)
 *   BUG_LOCK_WHILE_MODIFYING  modify of a timer in a heap takes that heap's
 *                          lock while it holds Modifying (timer.c says why
 *                          it must not: the lock holder may be waiting for
 *                          that Modifying to end) -- a livelock, so only the
 *                          liveness run (terminates) can see it
 *   BUG_REVIVE_NO_COUNT    start/modify of a Deleted timer does not take it
 *                          off deleted_timers (the counters go wrong)
 *   BUG_STOP_SYNC_NO_START_COUNT  stop_sync as it was before commit 1618c20:
 *                          it trusted the status read after waiting out the
 *                          callbacks, and could return while a callback of
 *                          the timer ran (this model found that; the
 *                          library now counts started callbacks)
 */

#define NP 2            /* Ps */
#define NT 2            /* timers */
#define NS 2            /* heap slots per P (>= NT: a timer is in one heap) */
#define NONE 255        /* no heap: the state word names none */
#ifndef MAXT
#define MAXT 2          /* the clock runs 1..MAXT */
#endif
#define NEVER 7         /* PT_MAXWHEN: never due */

/* enum pt_timer_status, same values */
#define NOSTATUS    0
#define WAITING     1
#define RUNNING     2
#define DELETED     3
#define REMOVING    4
#define REMOVED     5
#define MODIFYING   6
#define MOD_EARLIER 7
#define MOD_LATER   8
#define MOVING      9

#define ARM_START 0
#define ARM_RESET 1
#define EBUSY 2         /* stands for -EBUSY */

#define P0 0
#define P1 1
#define T0 0
#define T1 1

#define SLOT(p, i) ((p) * NS + (i))

/* ---- the C state ------------------------------------------------------ */

/* struct pt_timer */
byte st[NT];            /* status */
byte tw[NT];            /* when: the time asked for */
byte tsof[NT];          /* ts: the heap holding it, or NONE */
byte hidx[NT];          /* heap_index */
byte cbs[NT];           /* callbacks bits 1-15: callbacks of t running now */
byte cstart[NT];        /* callbacks bits 16-31: callbacks of t ever started */

/* struct pt_timers */
bit  lk[NP];            /* lock */
byte hlen[NP];          /* heap.len */
byte hkey[NP * NS];     /* heap.v[i].when */
byte hitem[NP * NS];    /* heap.v[i].item */
byte timer0[NP];        /* timer0_when, 0: none */
byte adj[NP];           /* modified_earliest, 0: none */
byte nts[NP];           /* num_timers */
byte ndel[NP];          /* deleted_timers */
bit  running[NP];       /* a callback of this heap runs (lock dropped) */

byte now = 1;           /* the clock: what pt_nanotime() would say */

/* ---- ghost state: what the properties are stated in ------------------- */

bit  live[NT];          /* armed, and neither stopped nor run since */
byte gen[NT];           /* armings so far (each start/reset/modify) */
byte lastrun[NT];       /* the arming that ran last */
byte incb[NP];          /* callbacks of heap p running now */
byte ndone;             /* processes that have finished (init waits for them:
                         * _nr_pr does not mix with pan -f) */
byte rearms;            /* how many more times a callback may re-arm its timer */
bit  finished;          /* every process has ended */

hidden byte hx, hy, hz, hw; /* scratch for d_steps only: never live across steps */

#define due(t) (live[t] && tw[t] != NEVER)

/* ---- locks and heap surgery (ts->lock held) ---------------------------- */

/* pt_timers_verify, run at every unlock: what must hold whenever nobody
 * holds the heap's lock. */
inline heap_inv(p)
{
    hx = 0; hy = 0; hz = 0; hw = NEVER + 1;
    do
    :: hx < hlen[p] ->
        assert(tsof[hitem[SLOT(p, hx)]] == p);
        assert(hidx[hitem[SLOT(p, hx)]] == hx);
        if
        :: hkey[SLOT(p, hx)] < hw -> hw = hkey[SLOT(p, hx)]
        :: else
        fi;
        if
        :: st[hitem[SLOT(p, hx)]] == WAITING ->
            assert(tw[hitem[SLOT(p, hx)]] == hkey[SLOT(p, hx)])
        :: st[hitem[SLOT(p, hx)]] == MOD_EARLIER || st[hitem[SLOT(p, hx)]] == MOD_LATER ->
            /* asked for earlier than its key: modified_earliest says so */
            assert(tw[hitem[SLOT(p, hx)]] >= hkey[SLOT(p, hx)] ||
                   (adj[p] != 0 && adj[p] <= tw[hitem[SLOT(p, hx)]]))
        :: st[hitem[SLOT(p, hx)]] == DELETED -> hz++
        :: st[hitem[SLOT(p, hx)]] == MODIFYING -> hy++
        :: else -> assert(false) /* Running, Moving, Removing, NoStatus, Removed in a heap */
        fi;
        hx++
    :: else -> break
    od;
    assert(nts[p] == hlen[p]);
    assert(timer0[p] == (hlen[p] == 0 -> 0 : hw));
    /* deleted_timers is exact but for stops and revivals in flight */
    assert(ndel[p] <= hz + hy && hz <= ndel[p] + hy);
    hx = 0; hy = 0; hz = 0; hw = 0
}

inline lock(p)
{
    atomic { lk[p] == 0 -> lk[p] = 1 }
}

inline unlock(p)
{
    d_step { heap_inv(p); lk[p] = 0 }
}

/* pt__heap4_top_when into timer0_when (update_timer0); the body, for use
 * inside a d_step */
inline top_into_timer0(p)
{
        hx = 0; hw = 0;
        do
        :: hx < hlen[p] ->
            if
            :: hw == 0 || hkey[SLOT(p, hx)] < hw -> hw = hkey[SLOT(p, hx)]
            :: else
            fi;
            hx++
        :: else -> break
        od;
        timer0[p] = hw;
        hx = 0; hw = 0
}

inline update_timer0(p)
{
    d_step { top_into_timer0(p) }
}

/* update_len. Three relaxed stores in the C; here one step with the heap
 * surgery before it (lock-free readers only use them as hints that the
 * lock then settles), which keeps the state space in reach. */
inline len_body(p)
{
    nts[p] = hlen[p];
    if
    :: hlen[p] == 0 -> adj[p] = 0 /* Go issue 51654 */
    :: else
    fi;
    top_into_timer0(p)
}

/* the heap's root: the least key */
inline head(p, i, t, key)
{
    d_step {
        i = 0; hx = 1;
        do
        :: hx < hlen[p] ->
            if
            :: hkey[SLOT(p, hx)] < hkey[SLOT(p, i)] -> i = hx
            :: else
            fi;
            hx++
        :: else -> break
        od;
        t = hitem[SLOT(p, i)];
        key = hkey[SLOT(p, i)];
        hx = 0
    }
}

/* the push in pt__timers_add_locked */
inline push_locked(p, t)
{
    d_step {
        tsof[t] = p;
        hkey[SLOT(p, hlen[p])] = tw[t];
        hitem[SLOT(p, hlen[p])] = t;
        hidx[t] = hlen[p];
        hlen[p]++;
        len_body(p)
    }
}

/* pt_timers_remove_locked: the entry must be where t says (else badTimer) */
inline remove_locked(p, t)
{
    d_step {
        hx = hidx[t];
        assert(hx < hlen[p] && hitem[SLOT(p, hx)] == t);
        hlen[p]--;
        if
        :: hx != hlen[p] ->
            hkey[SLOT(p, hx)] = hkey[SLOT(p, hlen[p])];
            hitem[SLOT(p, hx)] = hitem[SLOT(p, hlen[p])];
            hidx[hitem[SLOT(p, hx)]] = hx
        :: else
        fi;
        hkey[SLOT(p, hlen[p])] = 0;
        hitem[SLOT(p, hlen[p])] = 0;
        tsof[t] = NONE;
        len_body(p);
        hx = 0
    }
}

/* pt__heap4_heapify: a set needs no order, only fresh indices */
inline heapify(p)
{
        hx = 0;
        do
        :: hx < hlen[p] -> hidx[hitem[SLOT(p, hx)]] = hx; hx++
        :: else -> break
        od;
        do
        :: hx < NS -> hkey[SLOT(p, hx)] = 0; hitem[SLOT(p, hx)] = 0; hx++
        :: else -> break
        od;
        hx = 0
}

/* st_set: leave a transient state this thread owns; the C checks the old
 * value and aborts (pt__bad_timer) if another thread changed it. */
inline st_set(t, from, to)
{
    d_step { assert(st[t] == from); st[t] = to }
}

/* ---- timers.c: the heap side ------------------------------------------- */

/* remove_deleted: Deleted -> Removing -> Removed */
inline remove_deleted(p, t, ok)
{
    atomic {
        if
        :: st[t] == DELETED -> st[t] = REMOVING; ok = 1
        :: else -> ok = 0
        fi
    }
    if
    :: ok ->
        remove_locked(p, t);
        d_step { assert(ndel[p] > 0); ndel[p]-- }
        st_set(t, REMOVING, REMOVED)
    :: else
    fi;
    ok = 0
}

/* rekey_modified: ModifiedXX -> Moving -> Waiting, re-keyed to its when */
inline rekey_modified(p, t, s, ok)
{
    atomic {
        if
        :: st[t] == s -> st[t] = MOVING; ok = 1
        :: else -> ok = 0
        fi
    }
    if
    :: ok ->
        d_step {
            assert(hitem[SLOT(p, hidx[t])] == t);
            hkey[SLOT(p, hidx[t])] = tw[t];
            top_into_timer0(p)
        }
        st_set(t, MOVING, WAITING)
    :: else
    fi;
    ok = 0
}

/* the clean in pt__timers_add_locked (Go's cleantimers): rows "clean" */
inline clean_locked(p)
{
    do
    :: hlen[p] == 0 -> break
    :: else ->
        head(p, c_i, c_t, c_k);
        c_s = st[c_t];
        if
        :: c_s == DELETED -> remove_deleted(p, c_t, c_ok)
        :: c_s == MOD_EARLIER || c_s == MOD_LATER -> rekey_modified(p, c_t, c_s, c_ok)
        :: else -> break
        fi
    od;
    atomic { c_i = 0; c_t = 0; c_k = 0; c_s = 0 }
}

/* compact: adjusttimers and clearDeletedTimers in one pass. Rows "adjust"
 * and "clear_deleted". */
inline compact(p)
{
    adj[p] = 0;
    k_i = 0; k_kept = 0; k_rm = 0;
    do
    :: k_i < hlen[p] ->
        k_t = hitem[SLOT(p, k_i)];
        k_keep = 0;
        do
        :: k_s = st[k_t];
            if
            :: k_s == WAITING -> k_keep = 1; break
            :: k_s == DELETED ->
                atomic {
                    if
                    :: st[k_t] == DELETED -> st[k_t] = REMOVING; k_ok = 1
                    :: else -> k_ok = 0
                    fi
                }
                if
                :: k_ok ->
                    tsof[k_t] = NONE;
                    st_set(k_t, REMOVING, REMOVED);
                    k_rm++;
                    break
                :: else
                fi
            :: k_s == MOD_EARLIER || k_s == MOD_LATER ->
                atomic {
                    if
                    :: st[k_t] == k_s -> st[k_t] = MOVING; k_ok = 1
                    :: else -> k_ok = 0
                    fi
                }
                if
                :: k_ok ->
                    hkey[SLOT(p, k_i)] = tw[k_t];
                    st_set(k_t, MOVING, WAITING);
                    k_keep = 1;
                    break
                :: else
                fi
            :: k_s == MODIFYING -> skip /* st_wait */
            :: else -> assert(false)     /* pt__bad_timer(t, "adjust") */
            fi
        od;
        if
        :: k_keep ->
            d_step {
                hkey[SLOT(p, k_kept)] = hkey[SLOT(p, k_i)];
                hitem[SLOT(p, k_kept)] = hitem[SLOT(p, k_i)];
                k_kept++
            }
        :: else
        fi;
        k_i++
    :: else -> break
    od;
    skip; /* spin: a break may not jump straight into a d_step */
    d_step {
        hlen[p] = k_kept;
        assert(ndel[p] >= k_rm);
        ndel[p] = ndel[p] - k_rm;
        heapify(p);
        len_body(p)
    }
    atomic { k_i = 0; k_kept = 0; k_rm = 0; k_t = 0; k_s = 0; k_keep = 0; k_ok = 0 }
}

/* pt__timers_next_time: two separate atomic loads */
inline next_time(p, n)
{
    n = timer0[p];
    if
    :: n == 0 || (adj[p] != 0 && adj[p] < n) -> n = adj[p]
    :: else
    fi
}

/* ---- timer.c: operations on one timer, any thread ----------------------- */

/* lower_modified_earliest: a CAS loop, i.e. an atomic min */
inline lower_adj(h, w)
{
#ifndef BUG_NO_MODIFIED_EARLIEST
    d_step {
        if
        :: adj[h] == 0 || w < adj[h] -> adj[h] = w
        :: else
        fi
    }
#else
    skip
#endif
}

/* timer_stop (deltimer): row "stop". ret: 1 stopped a pending timer, 0 not */
inline stop(t, ret)
{
    do
    :: atomic { s_s = st[t]; s_g = live[t] }
        if
        :: s_s == WAITING || s_s == MOD_EARLIER || s_s == MOD_LATER ->
#ifndef BUG_STOP_NO_CAS
            atomic {
                if
                :: st[t] == s_s -> st[t] = MODIFYING; s_ok = 1; assert(live[t])
                :: else -> s_ok = 0
                fi
            }
#else
            /* the seeded bug: check, then a plain store */
            if
            :: st[t] == s_s -> s_ok = 1
            :: else -> s_ok = 0
            fi;
            if
            :: s_ok -> st[t] = MODIFYING
            :: else
            fi
#endif
            if
            :: s_ok ->
                s_h = tsof[t];
                assert(s_h != NONE);
                d_step { ndel[s_h]++ }
                d_step { assert(st[t] == MODIFYING); st[t] = DELETED; live[t] = 0 }
                ret = 1;
                break
            :: else
            fi
        :: s_s == NOSTATUS || s_s == DELETED || s_s == REMOVING || s_s == REMOVED ->
            assert(!s_g); /* it returns 0 only for a timer that was not pending */
            ret = 0;
            break
        :: s_s == RUNNING || s_s == MOVING || s_s == MODIFYING -> skip /* st_wait */
        :: else -> assert(false) /* pt__bad_timer(t, "stop") */
        fi
    od;
    atomic { s_s = 0; s_g = 0; s_ok = 0; s_h = 0 }
}

/* stop_eager (pt_timer_stop on a staged heap): row "stop, eager". The
 * word is loaded once; the heap it names is try-locked (a busy lock, like
 * a timer at the head or not where the C unlinks eagerly, leaves it to the
 * lazy stop: the C's conditions are a choice made here at random, which
 * covers them all); under the lock the word is loaded again and a pending
 * status claimed with a CAS from it, straight to Removing, and the entry
 * unlinked. e_done: 1 if it stopped t. */
inline stop_eager(t, e_done)
{
    atomic { e_s = st[t]; e_h = tsof[t] } /* one load of the state word */
    if
    :: (e_s == WAITING || e_s == MOD_EARLIER || e_s == MOD_LATER) && e_h != NONE ->
        atomic {
            if
            :: lk[e_h] == 0 -> lk[e_h] = 1; e_lk = 1 /* pt__trylock */
            :: true -> e_lk = 0                       /* busy, or not eager here */
            fi
        }
        if
        :: e_lk ->
            atomic { e_s = st[t]; e_w = tsof[t] } /* the word again, under the lock */
            atomic {
#ifndef BUG_EAGER_NO_RECHECK
                if
                :: e_w == e_h && st[t] == e_s &&
                   (e_s == WAITING || e_s == MOD_EARLIER || e_s == MOD_LATER) ->
#else
                /* the seeded bug: the heap it names is not checked again */
                if
                :: st[t] == e_s && (e_s == WAITING || e_s == MOD_EARLIER || e_s == MOD_LATER) ->
#endif
                    st[t] = REMOVING; e_ok = 1; assert(live[t]); live[t] = 0
                :: else -> e_ok = 0
                fi
            }
            if
            :: e_ok ->
                remove_locked(e_h, t);
                st_set(t, REMOVING, REMOVED);
                e_done = 1
            :: else
            fi;
            unlock(e_h)
        :: else
        fi
    :: else
    fi;
    atomic { e_s = 0; e_h = 0; e_lk = 0; e_w = 0; e_ok = 0 }
}

/* pt_timer_stop: the eager try on a staged heap (CFG_EAGER), then the lazy
 * stop if it did not stop t. */
inline stop_call(t, ret)
{
#ifdef CFG_EAGER
    stop_eager(t, ret);
    if
    :: ret == 0 -> stop(t, ret)
    :: else
    fi
#else
    stop(t, ret)
#endif
}

/* timer_arm: start (mode ARM_START) and reset/modify (ARM_RESET; period, f,
 * arg and seq are not modelled, so reset and modify are one). ret: 1 if it
 * was pending, 0 if not, EBUSY for a start of a pending timer. */
inline arm(p, t, w, mode, ret)
{
    a_in = 0; a_pend = 0; ret = 0;
    do
    :: atomic { a_s = st[t]; a_g = live[t] }
        if
        :: a_s == WAITING || a_s == MOD_EARLIER || a_s == MOD_LATER ->
            if
            :: mode == ARM_START -> assert(a_g); ret = EBUSY; break
            :: else ->
                /* modify: Waiting, ModifiedXX -> Modifying -> ModifiedXX */
                atomic {
                    if
                    :: st[t] == a_s -> st[t] = MODIFYING; a_ok = 1; assert(live[t])
                    :: else -> a_ok = 0
                    fi
                }
                if
                :: a_ok -> a_pend = 1; a_in = 1; break
                :: else
                fi
            fi
        :: a_s == NOSTATUS || a_s == REMOVED ->
            /* start, modify: NoStatus, Removed -> Modifying -> Waiting */
            atomic {
                if
                :: st[t] == a_s -> st[t] = MODIFYING; a_ok = 1; assert(!live[t])
                :: else -> a_ok = 0
                fi
            }
            if
            :: a_ok -> a_in = 0; break
            :: else
            fi
        :: a_s == DELETED ->
            /* start, modify: Deleted -> Modifying -> ModifiedXX */
            atomic {
                if
                :: st[t] == a_s -> st[t] = MODIFYING; a_ok = 1; assert(!live[t])
                :: else -> a_ok = 0
                fi
            }
            if
            :: a_ok ->
                a_h = tsof[t];
                assert(a_h != NONE);
#ifndef BUG_REVIVE_NO_COUNT
                d_step { assert(ndel[a_h] > 0); ndel[a_h]-- }
#endif
                a_in = 1;
                break
            :: else
            fi
        :: a_s == RUNNING || a_s == MOVING || a_s == REMOVING || a_s == MODIFYING ->
            skip /* st_wait */
        :: else -> assert(false) /* pt__bad_timer(t, op) */
        fi
    od;
    if
    :: ret == EBUSY -> skip
    :: !a_in ->
        /* in no heap: push onto p, taking its lock while Modifying */
        lock(p);
        clean_locked(p);
        tw[t] = w;
        push_locked(p, t);
        unlock(p);
        d_step { assert(st[t] == MODIFYING); st[t] = WAITING; live[t] = 1; gen[t]++ }
        ret = 0
    :: else ->
        /* in some heap, maybe another P's: record the time, let its owner
         * re-key it */
        a_h = tsof[t];
        assert(a_h != NONE);
#ifdef BUG_LOCK_WHILE_MODIFYING
        lock(a_h);
#endif
        d_step {
            a_ns = (w < tw[t] -> MOD_EARLIER : MOD_LATER);
            tw[t] = w
        }
#ifdef BUG_LOCK_WHILE_MODIFYING
        unlock(a_h);
#endif
        if
        :: a_ns == MOD_EARLIER -> lower_adj(a_h, w)
        :: else
        fi;
        d_step { assert(st[t] == MODIFYING); st[t] = a_ns; live[t] = 1; gen[t]++ }
        ret = a_pend
    fi;
    atomic { a_s = 0; a_g = 0; a_ok = 0; a_in = 0; a_pend = 0; a_h = 0; a_ns = 0 }
}

/* the callback f(arg, seq), run with the heap's lock dropped. It may reset
 * its own timer (once in the whole run), onto the heap that runs it, as a
 * callback may call anything. */
inline callback(p, t)
{
    d_step { incb[p]++; assert(incb[p] == 1) } /* one callback per heap at a time */
    if
    :: rearms > 0 ->
        rearms--;
        if
        :: f_w = 1
        :: f_w = MAXT
        fi;
        arm(p, t, f_w, ARM_RESET, f_r);
        atomic { f_w = 0; f_r = 0 }
    :: true -> skip
    fi;
    d_step { incb[p]-- }
}

/* run_one: one-shot Waiting -> Running -> NoStatus, out of the heap, then
 * the callback with the lock dropped */
inline run_one(p, t)
{
    /* one fetch_add (PT__CB_RUNNING + PT__CB_STARTED), before the status
     * leaves Running */
    d_step { cbs[t]++; cstart[t]++ }
    remove_locked(p, t);
    st_set(t, RUNNING, NOSTATUS);
    d_step { running[p] = 1; heap_inv(p); lk[p] = 0 }
    callback(p, t);
    cbs[t]--;
    atomic { lk[p] == 0 -> lk[p] = 1; running[p] = 0 }
}

/* run_head (Go's runtimer): rows "run". r: 0 ran one, 1 head not due,
 * 2 empty */
inline run_head(p, n, r)
{
    do
    :: hlen[p] == 0 -> r = 2; break
    :: else ->
        head(p, r_i, r_t, r_k);
        r_s = st[r_t];
        if
        :: r_s == WAITING ->
            if
            :: r_k > n || r_k == NEVER -> r = 1; break
            :: else ->
                atomic {
                    if
                    :: st[r_t] == WAITING ->
                        st[r_t] = RUNNING; r_ok = 1;
                        /* a timer runs only for an arming that is still live,
                         * at its own time, not early, once */
                        assert(live[r_t] && tw[r_t] == r_k && r_k <= n);
                        assert(lastrun[r_t] != gen[r_t]);
                        lastrun[r_t] = gen[r_t];
                        live[r_t] = 0
                    :: else -> r_ok = 0
                    fi
                }
                if
                :: r_ok -> r_ok = 0; run_one(p, r_t); r = 0; break
                :: else
                fi
            fi
        :: r_s == DELETED -> remove_deleted(p, r_t, r_ok)
        :: r_s == MOD_EARLIER || r_s == MOD_LATER -> rekey_modified(p, r_t, r_s, r_ok)
        :: r_s == MODIFYING -> skip /* st_wait */
        :: else -> assert(false)     /* pt__bad_timer(t, "run") */
        fi
    od;
    atomic { r_i = 0; r_t = 0; r_k = 0; r_s = 0; r_ok = 0 }
}

/* pt_timers_check (checkTimers). Besides the asserts inside, it checks
 * that it was not late: a timer that was settled on p when the check
 * began (pending, filed in p, p's lock free: no push or move in flight,
 * which the wake callback would report instead) and due by the check's
 * now has run by the time it returns -- unless it was re-armed, stopped
 * or moved meanwhile, or the check stepped aside for another thread's
 * callback. */
inline check(p, owner)
{
    x_n = now;
    d_step {
        hx = 0;
        do
        :: hx < NT ->
            x_g[hx] = (live[hx] && tsof[hx] == p && st[hx] != MODIFYING && !lk[p] ->
                       gen[hx] : 255);
            hx++
        :: else -> break
        od;
        hx = 0
    }
    next_time(p, x_next);
    if
    :: x_next == 0 -> skip
    :: x_next != 0 && x_n < x_next && (!owner || ndel[p] <= nts[p] / 4) -> skip
    :: else ->
        lock(p);
        if
        :: running[p] -> x_skip = 1
        :: else ->
            x_a = adj[p];
            if
            :: hlen[p] > 0 && x_a != 0 && x_a <= x_n -> compact(p)
            :: else
            fi;
            x_a = 0;
            do
            :: hlen[p] > 0 ->
                run_head(p, x_n, x_r);
                if
                :: x_r == 0 -> skip
                :: else -> break
                fi
            :: else -> break
            od;
            x_r = 0;
            if
            :: owner && ndel[p] > hlen[p] / 4 -> compact(p)
            :: else
            fi
        fi;
        unlock(p)
    fi;
    d_step {
        hx = 0;
        do
        :: hx < NT ->
            assert(x_skip || !(x_g[hx] == gen[hx] && live[hx] && tsof[hx] == p &&
                               tw[hx] <= x_n && st[hx] != MODIFYING));
            x_g[hx] = 0;
            hx++
        :: else -> break
        od;
        hx = 0
    }
    atomic { x_n = 0; x_next = 0; x_skip = 0 }
}

/* pt_timers_move (moveTimers): rows "move" */
inline move(dst, src)
{
    lock(P0);                   /* address order: P0 first */
    lock(P1);
    m_i = 0;
    do
    :: m_i < hlen[src] ->
        m_t = hitem[SLOT(src, m_i)];
        do
        :: m_s = st[m_t];
            if
            :: m_s == WAITING || m_s == MOD_EARLIER || m_s == MOD_LATER ->
                atomic {
                    if
                    :: st[m_t] == m_s -> st[m_t] = MOVING; m_ok = 1
                    :: else -> m_ok = 0
                    fi
                }
                if
                :: m_ok ->
                    tsof[m_t] = dst;
                    d_step {
                        hkey[SLOT(dst, hlen[dst])] = tw[m_t];
                        hitem[SLOT(dst, hlen[dst])] = m_t;
                        hlen[dst]++
                    }
                    st_set(m_t, MOVING, WAITING);
                    break
                :: else
                fi
            :: m_s == DELETED ->
                atomic {
                    if
                    :: st[m_t] == DELETED -> st[m_t] = REMOVING; m_ok = 1
                    :: else -> m_ok = 0
                    fi
                }
                if
                :: m_ok ->
                    tsof[m_t] = NONE;
                    st_set(m_t, REMOVING, REMOVED);
                    break
                :: else
                fi
            :: m_s == MODIFYING -> skip /* st_wait */
            :: else -> assert(false)     /* pt__bad_timer(t, "move") */
            fi
        od;
        m_i++
    :: else -> break
    od;
    skip; /* spin: a break may not jump straight into a d_step */
    d_step {
        hlen[src] = 0;
        heapify(src);
        ndel[src] = 0;
        len_body(src);
        heapify(dst);
        len_body(dst)
    }
    unlock(P1);
    unlock(P0);
    atomic { m_i = 0; m_t = 0; m_s = 0; m_ok = 0 }
}

/* unlink_deleted (stop_sync): Deleted -> Removing -> Removed under the
 * holding heap's lock, re-checked under it */
inline unlink_deleted(t)
{
    do
    :: atomic { st[t] == DELETED -> u_h = tsof[t] } /* one load of the state word */
        assert(u_h != NONE); /* Deleted is always in a heap: the C aborts */
        lock(u_h);
        atomic { /* the word again under the lock, then the CAS from it */
            if
            :: tsof[t] == u_h && st[t] == DELETED -> st[t] = REMOVING; u_ok = 1
            :: else -> u_ok = 0
            fi
        }
        if
        :: u_ok ->
            remove_locked(u_h, t);
            d_step { assert(ndel[u_h] > 0); ndel[u_h]-- }
            st_set(t, REMOVING, REMOVED)
        :: else
        fi;
        unlock(u_h);
        atomic { u_h = 0; u_ok = 0 }
    :: else -> break
    od
}

/* pt_timer_stop_sync from a thread that is not in t's callback (mine = 0) */
inline stop_sync(t, ret)
{
    stop(t, ret);
    do
    :: unlink_deleted(t);
#ifdef BUG_STOP_SYNC_NO_START_COUNT
        /* stop_sync before commit 1618c20: the status after the wait alone */
        (cbs[t] == 0);          /* wait_callbacks: the futex sleep */
        y_s = st[t];
        if
        :: y_s == NOSTATUS || y_s == REMOVED -> break
        :: else -> stop(t, y_r); ret = ret | y_r; y_r = 0
        fi
#else
        /* A status seen after the wait proves nothing about a callback that
         * started after the wait; a count of started callbacks, unchanged
         * across the wait and the status load, does. */
        y_g = cstart[t];
        (cbs[t] == 0);          /* wait_callbacks: the futex sleep */
        y_s = st[t];
        if
        :: (y_s == NOSTATUS || y_s == REMOVED) && cstart[t] == y_g -> break
        :: else -> stop(t, y_r); ret = ret | y_r; y_r = 0
        fi;
        y_g = 0
#endif
    od;
    y_s = 0;
    /* the contract: t is in no heap and no callback of it runs, so the
     * caller may free it */
    d_step {
        assert(cbs[t] == 0);
        assert(st[t] == NOSTATUS || st[t] == REMOVED);
        assert(tsof[t] == NONE && !live[t])
    }
}

/* ---- processes -------------------------------------------------------- */

/* Every temporary of every inline; reset to 0 after use, so equal states
 * match. */
#define LOCALS \
    byte s_s, s_g, s_ok, s_h; \
    byte a_s, a_g, a_ok, a_in, a_pend, a_h, a_ns; \
    byte c_i, c_t, c_k, c_s, c_ok; \
    byte k_i, k_kept, k_rm, k_t, k_s, k_keep, k_ok; \
    byte r_i, r_t, r_k, r_s, r_ok; \
    byte f_w, f_r; \
    byte x_n, x_next, x_skip, x_a, x_r; \
    byte x_g[NT]; \
    byte m_i, m_t, m_s, m_ok; \
    byte u_h, u_ok; \
    byte y_s, y_r, y_g; \
    byte e_s, e_h, e_lk, e_w, e_ok

/* Which actors race (see the top of the file). */
#if defined(CFG_SYNC)
#define HAS_SYNCER 1
#define HAS_HELPER 1
#define NACTORS 2
#elif defined(CFG_SYNCMOVE)
#define HAS_SYNCER 1
#define HAS_MOVER 1
#define NACTORS 2
#elif defined(CFG_HELP)
#define HAS_MODIFIER 1
#define HAS_HELPER 1
#define NACTORS 2
#elif defined(CFG_HELPSTOP)
#define HAS_STOPPER 1
#define HAS_HELPER 1
#define NACTORS 2
#elif defined(CFG_MOVE)
#define HAS_MODIFIER 1
#define HAS_STOPPER 1
#define HAS_MOVER 1
#define NACTORS 3
#elif defined(CFG_EAGER) && defined(CFG_EAGERMOVE)
#define HAS_STOPPER 1
#define HAS_MOVER 1
#define NACTORS 2
#else
#define HAS_MODIFIER 1
#define HAS_STOPPER 1
#define NACTORS 2
#endif

#ifndef REARMS
#define REARMS 1        /* times a callback may re-arm its own timer */
#endif

/* checks each owner makes before its final one */
#ifndef NCHECK0
#define NCHECK0 1
#endif
#ifndef NCHECK1
#define NCHECK1 0
#endif

/* A P's owner: a few checks as time passes (any owner may advance the
 * clock before it looks), racing with the actors. The owners' last checks,
 * once everything else has stopped, are made by init below. */
proctype Owner(byte p; byte nck)
{
    LOCALS;
    byte k;
    do
    :: k < nck ->
        if
        :: now < MAXT -> now++
        :: true
        fi;
        check(p, 1);
        k++
    :: else -> break
    od;
    k = 0;
    ndone++
}

#ifdef HAS_HELPER
/* A thread helping with P0's timers (findrunnable's steal): owner = false. */
proctype Helper()
{
    LOCALS;
    check(P0, 0);
    ndone++
}
#endif

#ifdef HAS_MOVER
/* The P going away: its timers move to P1. */
proctype Mover()
{
    LOCALS;
    move(P1, P0);
    ndone++
}
#endif

#ifdef HAS_MODIFIER
/* Re-arms T0 from another thread: reset(P1, T0, w). A pending T0 stays in
 * its heap (ModifiedXX); one in no heap is pushed onto P1. */
proctype Modifier()
{
    LOCALS;
    byte w, r;
    if
    :: w = 1
    :: w = NEVER
    fi;
    arm(P1, T0, w, ARM_RESET, r);
    w = 0; r = 0;
    ndone++
}
#endif

#ifdef HAS_STOPPER
/* Stops T1 (a bystander on P0, to give the counters and the scans work),
 * then T0. */
proctype Stopper()
{
    LOCALS;
    byte r;
    stop_call(T1, r);
    r = 0;
    stop_call(T0, r);
    r = 0;
    ndone++
}
#endif

#ifdef HAS_SYNCER
/* Disposes of T0 while its owner may be running it. */
proctype Syncer()
{
    LOCALS;
    byte r;
    stop_sync(T0, r);
    r = 0;
    ndone++
}
#endif

/* The state before the actors start: T0 due at 2 and T1 due at 1, both
 * started on P0 (pt_timer_start from P0's own thread). */
init
{
    LOCALS;
    d_step {
        tsof[T0] = NONE; tsof[T1] = NONE;
        st[T1] = WAITING; tw[T1] = 1; tsof[T1] = P0; hidx[T1] = 0;
        hkey[SLOT(P0, 0)] = 1; hitem[SLOT(P0, 0)] = T1;
        st[T0] = WAITING; tw[T0] = 2; tsof[T0] = P0; hidx[T0] = 1;
        hkey[SLOT(P0, 1)] = 2; hitem[SLOT(P0, 1)] = T0;
        hlen[P0] = 2; nts[P0] = 2; timer0[P0] = 1;
        live[T0] = 1; gen[T0] = 1; live[T1] = 1; gen[T1] = 1;
        rearms = REARMS
    }
    atomic {
        run Owner(P0, NCHECK0);
        run Owner(P1, NCHECK1);
#ifdef HAS_HELPER
        run Helper();
#endif
#ifdef HAS_MOVER
        run Mover();
#endif
#ifdef HAS_MODIFIER
        run Modifier();
#endif
#ifdef HAS_STOPPER
        run Stopper();
#endif
#ifdef HAS_SYNCER
        run Syncer();
#endif
        skip
    }
    ndone == NACTORS + 2;
    /* Time passes and each owner looks again: twice round, since a callback
     * run in the first round may re-arm its timer (once, see rearms). */
    now = MAXT;
    check(P0, 1);
    check(P1, 1);
    check(P0, 1);
    check(P1, 1);
    /* Everything has stopped: the heaps are exact, and every timer still
     * armed is one that can never be due. */
    d_step {
        heap_inv(P0);
        heap_inv(P1);
        hx = 0;
        do
        :: hx < NT ->
            assert(!due(hx));
            assert(cbs[hx] == 0);
            if
            :: st[hx] == NOSTATUS || st[hx] == REMOVED -> assert(tsof[hx] == NONE)
            :: else -> assert(st[hx] == WAITING || st[hx] == DELETED ||
                              st[hx] == MOD_EARLIER || st[hx] == MOD_LATER);
                       assert(tsof[hx] != NONE)
            fi;
            hx++
        :: else -> break
        od;
        hx = 0;
        hy = 0;
        do
        :: hy < NP ->
            hz = 0; hx = 0;
            do
            :: hx < hlen[hy] -> hz = hz + (st[hitem[SLOT(hy, hx)]] == DELETED); hx++
            :: else -> break
            od;
            assert(ndel[hy] == hz);
            hy++
        :: else -> break
        od;
        hx = 0; hy = 0; hz = 0;
        finished = 1
    }
}

/* Liveness, checked with weak fairness (pan -a -f):
 * every arming of T0 that can come due ends: it runs, or is stopped. */
ltl t0_runs { [] (due(T0) -> <> !due(T0)) }
ltl t1_runs { [] (due(T1) -> <> !due(T1)) }
/* no livelock: every process finishes (no one spins forever on a state
 * another thread can never leave) */
ltl terminates { <> finished }
