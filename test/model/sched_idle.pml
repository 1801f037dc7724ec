/* sched_idle.pml: how the scheduler's Ms go idle, who owns the netpoller,
 * and how they are woken (sched/proc.c: find_runnable's idle section,
 * claim_poller, pt__poller_release, pt__poller_try, pt__poll_ready_fds,
 * pt__wakep, pt__wake_timers; sched/sysmon.c: the monitor's loop,
 * sysmon_sleep, pt__sysmon_kick; netpoll/netpoll.c: pt_netpoll_wait,
 * pt_netpoll_wake, pt__np_signal), to check that the scheduler never
 * stalls: no state in which every thread (each M and the monitor) sleeps
 * without a deadline while work exists, or while a descriptor is
 * registered and nobody is in the netpoller to see it become ready.
 *
 * Threads: NM Ms (1 or 2, one P each), the monitor, the environment (an
 * outside thread and the kernel), the clock, and a watchdog. Each shared
 * access of the C is a step of its own, in the C's order, except where a
 * comment says that consecutive loads are taken in one step (an
 * interleaving the C has; README.md lists them). The model is
 * sequentially consistent. Time is abstract: a timer is armed (1) or due
 * (2); the clock makes an armed timer due at any moment, and a netpoll
 * wait with a deadline (a timer was armed when the poller looked at the
 * heaps) returns once any timer has come due since that look. The futex
 * words are kept as "changed since this thread read it" bits, exact for
 * the `seen` comparisons the C makes (park_word and sysmon_word only grow).
 *
 * Checked (pan -DSAFETY): once nothing can move (the environment done,
 * every thread asleep with no deadline: parked, in the monitor's idle
 * sleep, or in a netpoll wait without one), no work is left (no G queued,
 * no descriptor ready that no poll has returned, no timer armed or due)
 * and, a descriptor being registered, somebody owns the netpoller (the
 * only thread that can be asleep owning it is one in the netpoller); a
 * thread blocked anywhere else is an invalid end state. Liveness
 * (`ltl taken`, pan -a -f, with MONPOLLS bounding the monitor's polls):
 * every run ends with the environment done and no work left.
 *
 * Seeded bugs (check.sh requires spin to catch each one):
 * -DOLD_RELEASE: the protocol before poll_wanted (f137c0b): an M that
 *   loses the claim parks, and a release is a plain store of polling = 0.
 *   The monitor's non-blocking poll holds the claim while the last busy M
 *   goes idle; the M parks with no deadline, the monitor drops the claim,
 *   finds every P idle and sleeps: nobody polls again.
 * -DBUG_RELEASE_ORDER: the release reads poll_wanted before it stores
 *   polling = 0.
 * -DBUG_NO_REREAD: the M that loses the claim stores poll_wanted and parks
 *   without looking at polling again.
 * -DBUG_RELEASE_WAKEP: the release wakes with pt__wakep instead of the
 *   parking word's own bump and futex wake (wakep stands back while an M
 *   spins or while a signal is in flight).
 * -DBUG_WAKER_LOOPS: the waker that reached nobody signals again unless
 *   it finds the flag at 1 (also when an M that woke took it down to 0):
 *   waker and M can go round for ever, each sending the other back.
 * -DBUG_SEEN_SKIPS_POLL: the poller that finds the parking word moved
 *   skips the netpoller altogether (the C before the fix): two idle Ms
 *   pass the claim back and forth, each release's bump sending the other
 *   past its wait, and a ready descriptor is never polled.
 * -DBUG_NO_SEEN_CHECK: the poller sleeps in the netpoller even when the
 *   parking word has moved since it read it (a wakep that read polling
 *   before the claim signalled by the parking word alone).
 *
 * Found by this model (the seeded run idle.wakep_pending, -DOLD_WAKEP):
 * pt__wakep's one-signal-in-flight flag (wakeup_pending) lost a wake-up.
 * A wakep that bumped the parking word and found nobody parked and nobody
 * polling cleared the flag; a second wakep that came while the flag was
 * set returned at once, trusting the first; but the first's bump came
 * before an M read the parking word for its next idle round, and that
 * M's last look came before the second wakep's G. The M then slept in the
 * netpoller with no deadline, the G on the global queue. Now the flag
 * counts the wakeps that join it; the waker that reached nobody takes it
 * down by one and signals again if a joiner is left.
 *
 * Configuration (-D): NM=1 (default 2); FDS: a descriptor registered
 * (nfds != 0: the non-blocking polls of find_runnable and of the monitor
 * take the claim); the environment's events, each once and in any order:
 * EV_G (a G made runnable from outside: global queue + wakep), EV_FD (the
 * registered descriptor becomes ready; implies FDS; only a netpoll wait
 * sees it), EV_TIMER (a timer armed from outside on a P, then its heap's
 * wake), G_ARMS (the first G an M runs may arm a timer on its P). A fired
 * timer readies a G on the P of the M that ran it (a sleeping G).
 * CFG_NOSPIN: no M ever spins (nmspinning stays 0, nobody steals).
 * MONPOLLS=n: the monitor polls at most n times (for the liveness run: an
 * unbounded monitor may win every race for the claim, as the C's, which
 * polls at most every 10 ms, cannot). NOWATCH: no watchdog (the liveness
 * runs, so that the claim alone must see a stall). */

#ifndef NM
#define NM 2
#endif
#if defined(EV_FD) && !defined(FDS)
#define FDS
#endif

/* the netpoll timeouts, also poll_until's values: none (a non-blocking
 * poll; poll_until 0: nobody waits), a deadline, no deadline (PT_MAXWHEN) */
#define D0   0
#define DFIN 1
#define DINF 2

/* ---- shared state ---- */
byte gq;                 /* s->globq.len */
byte lrq[NM];            /* each P's run queue */
byte tmr[NM];            /* each P's earliest timer: 0 none, 1 armed, 2 due */
bit  nfds;               /* s->nfds != 0: a descriptor registered */
bit  fdready;            /* the kernel: that descriptor ready, no poll has returned it yet */
byte garm;               /* timers the Gs may still arm */

byte npidle;             /* s->idle.npidle */
byte nmspinning;         /* s->idle.nmspinning */
byte wakeup_pending;     /* s->idle.wakeup_pending */
bit  polling;            /* s->idle.polling: the netpoller's claim */
bit  poll_wanted;        /* s->idle.poll_wanted */
bit  pwch[NM];           /* s->idle.park_word != that M's `seen` */
bit  parked[NM];         /* that M asleep in futex_wait(park_word) */
bit  sysmon_sleeping;    /* s->sysmon.sleeping */
bit  smch;               /* s->sysmon.word != the monitor's `seen` */
bit  smparked;           /* the monitor asleep in futex_wait(sysmon_word) */

byte poll_until;         /* np->poll_until: 0, DFIN, DINF */
bit  wake_sig;           /* np->wake_sig (WAKE_USER: the only reason the scheduler sends) */
bit  breakfd;            /* np->breakfd readable (eventfd count != 0) */
bit  tick;               /* a timer came due since the poller looked at the heaps: its deadline has passed */

bit  env_done;

#if NM == 1
#define BUMP_PARK  pwch[0] = 1
#define NO_QUEUED  (gq == 0 && lrq[0] == 0)
#define NO_TIMERS  (tmr[0] == 0)
#else
#define BUMP_PARK  d_step { pwch[0] = 1; pwch[1] = 1 }
#define NO_QUEUED  (gq == 0 && lrq[0] == 0 && lrq[1] == 0)
#define NO_TIMERS  (tmr[0] == 0 && tmr[1] == 0)
#endif
#define NOWORK     (NO_QUEUED && NO_TIMERS && !fdready)

/* ---- futexes ---- */

/* pt__futex_wake(&park_word, 1): wakes one M asleep on it; nw = how many */
inline futex_wake_park(nw)
{
    atomic {
        if
        :: parked[0] -> parked[0] = 0; nw = 1
#if NM > 1
        :: parked[1] -> parked[1] = 0; nw = 1
#endif
        :: else -> nw = 0
        fi
    }
}

/* pt__sysmon_kick: sysmon_word++, futex wake */
inline sysmon_kick()
{
    smch = 1;
    smparked = 0
}

/* ---- netpoll ---- */

/* pt__np_signal(np, WAKE_USER): fetch_or the reason; the first writes the
 * eventfd. The signal is sticky: it stays until a blocking wait takes it. */
inline np_signal()
{
    atomic { sg = wake_sig; wake_sig = 1 };
    if
    :: sg == 0 -> breakfd = 1
    :: else
    fi;
    sg = 0
}

/* pt_netpoll_wake(np, when): read poll_until (a read-modify-write); break
 * if nobody waits (0) or the waiter wakes later than `when`: with no
 * deadline always, with one when the new timer is earlier (either may be,
 * time being abstract) */
inline netpoll_wake()
{
    pu = poll_until;
    if
    :: pu != DFIN -> np_signal()
    :: pu == DFIN -> np_signal()         /* the new timer is earlier */
    :: pu == DFIN -> skip                /* later: the waiter wakes first */
    fi;
    pu = 0
}

/* pt_netpoll_wait(np, 0, ...), a non-blocking wait: takes what is ready
 * now; touches neither poll_until nor the signal (only a blocking wait
 * consumes it) */
inline np_poll_now()
{
    atomic { got = fdready; fdready = 0 }
}

/* pt_netpoll_wait(np, timeout, ...), timeout dl: D0 (0), DFIN (a time),
 * DINF (-1). got: an event returned; user: a break taken. Only the poller
 * calls it with a timeout, and only once in its proctype (the label). */
inline np_wait(dl)
{
    do
    ::
        if
        :: dl == DFIN -> poll_until = DINF        /* exchange: "asleep, bound unknown" */
        :: else                                   /* DINF: the store below writes the same */
        fi;
        nu = dl;                                  /* until = deadline */
        if
        :: nu != D0 ->
            poll_until = nu;
            if
            :: wake_sig -> nu = D0                /* a signal pending: do not sleep */
            :: else
            fi
        :: else
        fi;
        /* the kernel wait (epoll_wait): returns what is ready; without a
         * deadline only once something is (the descriptor or the break
         * eventfd, level-triggered); with one, at any moment */
end_np:
        if
        :: atomic { nu == D0 || fdready || breakfd || (nu == DFIN && tick) ->
                    got = fdready; fdready = 0; brk = breakfd }
        fi;
        if
        :: dl != D0 && (brk || wake_sig) ->
            atomic { breakfd = 0; user = wake_sig; wake_sig = 0 }  /* drain, take the reason */
        :: else
        fi;
        brk = 0;
        if
        :: got || user || dl == D0 || (dl == DFIN && tick) -> break  /* an event, a user break, non-blocking, the deadline */
        :: else -> skip                           /* wait again */
        fi
    od;
    poll_until = 0;
    nu = 0
}

/* ---- the scheduler ---- */

/* pt__wakep */
inline wakep()
{
    if
    :: npidle == 0 || nmspinning != 0 -> skip     /* two loads, one step */
    :: else ->
#ifndef OLD_WAKEP
        /* wakeup_pending: 1, a signal in flight; 2, and a wakep joined
         * it. The waker that reached nobody takes it down by one and
         * signals again if that leaves it at 1 */
        atomic { wk = wakeup_pending; if :: wakeup_pending < 2 -> wakeup_pending++ :: else fi };
        if
        :: wk == 0 ->
            do
            ::
                BUMP_PARK;
                futex_wake_park(wk);
                if
                :: wk -> break
                :: else
                fi;
                if
                :: polling -> np_signal(); break
                :: else
                fi;
                atomic {                          /* the flag down by one */
                    if
                    :: wakeup_pending == 1 -> wakeup_pending = 0
                    :: wakeup_pending == 2 -> wakeup_pending = 1; wk = 1
#ifdef BUG_WAKER_LOOPS
                    :: else -> wakeup_pending = 1; wk = 1
#else
                    :: else                       /* an M that woke took it down */
#endif
                    fi
                };
                if
                :: wk -> wk = 0                   /* some joined: signal again */
                :: else -> break
                fi
            od
        :: else
        fi;
        wk = 0
#else
        atomic { wk = wakeup_pending; wakeup_pending = 1 };
        if
        :: wk == 0 ->
            BUMP_PARK;                            /* park_word++ */
            futex_wake_park(wk);
            if
            :: wk -> skip
            :: else ->
                if
                :: polling -> np_signal()         /* pt_netpoll_break: the poller clears the flag */
                :: else -> wakeup_pending = 0
                fi
            fi
        :: else
        fi;
        wk = 0
#endif
    fi
}

/* pt__wake_timers(p): a timer armed on P p is its heap's earliest */
inline wake_timers()
{
    if
    :: polling -> netpoll_wake()                  /* fetch_add(polling, 0) */
    :: else -> wakep()
    fi
}

/* pt__poller_release: drop the claim; wake an M that wanted it */
inline poller_release()
{
#if defined(OLD_RELEASE)
    polling = 0
#else
#  if defined(BUG_RELEASE_ORDER)
    w = poll_wanted;                              /* the want read too early */
    polling = 0;
    if
    :: w ->
#  else
    polling = 0;
    if
    :: poll_wanted ->
#  endif
        atomic { w = poll_wanted; poll_wanted = 0 };
        if
        :: w ->
#  if defined(BUG_RELEASE_WAKEP)
            wakep()
#  else
            BUMP_PARK;                            /* park_word++ */
            futex_wake_park(w)
#  endif
        :: else
        fi
    :: else
    fi;
    w = 0
#endif
}

/* pt__poll_ready_fds' claim (pt__poller_try), poll and release; got: an
 * event, which the caller dispatches */
inline poll_ready_fds()
{
    if
    :: atomic { nfds && polling == 0 -> polling = 1 } ->  /* load, exchange */
        np_poll_now();
        poller_release()
    :: else
    fi
}

/* start_spinning: at most half as many spinning as busy Ps (the loads of
 * npidle and nmspinning and the increment in one step) */
inline start_spinning()
{
#ifdef CFG_NOSPIN
    skip
#else
    if
    :: !spinning && 2 * nmspinning < NM - npidle -> spinning = 1; nmspinning++
    :: else
    fi
#endif
}

/* a due timer of some P run by this M: the sleeping G it wakes goes on
 * this M's P (pt__g_put_runnable), then wakep */
inline fire()
{
    lrq[me]++;
    wakep()
}

/* An M: pt__m_main's loop round find_runnable. */
proctype M(byte me)
{
    byte t, w, wk, sg, pu, nu, dl;
    bit spinning, was_spinning, got, user, brk;
#if NM > 1
    byte o = 1 - me;
#endif
top:
    /* run_timers(m, p): this P's due timers */
    if
    :: d_step { tmr[me] == 2 -> tmr[me] = 0 } -> fire()
    :: else
    fi;
    /* this P's queue, then the global queue (their loads in one step) */
    if
    :: d_step { lrq[me] > 0 -> lrq[me]-- } -> goto found
    :: d_step { lrq[me] == 0 && gq > 0 -> gq-- } -> goto found
    :: else
    fi;
    /* pt__poll_ready_fds, then pt__runq_get(p) */
    poll_ready_fds();
    if
    :: got ->
        got = 0;
        fire();                                   /* pt__fd_ready readies the G here */
        if
        :: d_step { lrq[me] > 0 -> lrq[me]-- } -> goto found
        :: else
        fi
    :: else
    fi;
    /* start_spinning and steal_work: the other P's queue, or (last pass)
     * its due timers */
    start_spinning();
#if NM > 1
    if
    :: spinning ->
        if
        :: d_step { lrq[o] > 0 -> lrq[o]-- } -> goto found
        :: d_step { tmr[o] == 2 -> tmr[o] = 0 } ->
            fire();
            if
            :: d_step { lrq[me] > 0 -> lrq[me]-- } -> goto found
            :: else
            fi
        :: else
        fi
    :: else
    fi;
#endif
    /* run_all_due_timers */
    if
    :: d_step { tmr[0] == 2 -> tmr[0] = 0 } -> fire(); goto top
#if NM > 1
    :: d_step { tmr[1] == 2 -> tmr[1] = 0 } -> fire(); goto top
#endif
    :: else
    fi;

    /* ---- idle ---- */
    pwch[me] = 0;                                 /* seen = park_word */
    npidle++;
    was_spinning = spinning;
    if                                            /* stop_spinning */
    :: spinning -> spinning = 0; nmspinning--
    :: else
    fi;
    /* the last look: earliest_timer (each P's heap) and work_anywhere (the
     * global queue, each P's queue), their loads in one step */
    t = (tmr[0] == 2 || gq > 0 || lrq[0] > 0
#if NM > 1
         || tmr[1] == 2 || lrq[1] > 0
#endif
        );
    if
    :: t ->
        t = 0;
        npidle--;
        if
        :: was_spinning -> was_spinning = 0; start_spinning()
        :: else
        fi;
        goto top
    :: else
    fi;
    was_spinning = 0;

    /* claim_poller */
claim:
    atomic { t = polling; polling = 1 };
    if
    :: t != 0 ->                                  /* lost */
        t = 0;
#if !defined(OLD_RELEASE)
        poll_wanted = 1;
#  if !defined(BUG_NO_REREAD)
        if
        :: polling == 0 -> goto claim
        :: else
        fi;
#  endif
#endif
        goto park
    :: else
    fi;

    /* the poller. until = earliest_timer(s), now: the timeout. A due
     * timer: 0; an armed one: a deadline; none: -1. */
    d_step {
        tick = 0;
        dl = 2 - tmr[0];
#if NM > 1
        if :: 2 - tmr[1] < dl -> dl = 2 - tmr[1] :: else fi
#endif
    };
#if !defined(BUG_NO_SEEN_CHECK)
    if
#  ifdef BUG_SEEN_SKIPS_POLL
    :: pwch[me] -> goto polled                    /* park_word != seen: no poll at all */
#  else
    :: pwch[me] -> dl = D0                        /* park_word != seen: a poll, no wait */
#  endif
    :: else
    fi;
#endif
    np_wait(dl);
polled:
    dl = 0; user = 0;
    poller_release();
    if
    :: got -> got = 0; fire()                     /* pt__fd_ready */
    :: else
    fi;
    goto awake;

park:
    /* pt__futex_wait(&park_word, seen, 0) */
    atomic {
        if
        :: pwch[me] -> skip
        :: else -> parked[me] = 1
        fi
    };
end_park:
    parked[me] == 0;

awake:
    wakeup_pending = 0;
    atomic { t = npidle; npidle-- };
    if
    :: t == NM ->
        if
        :: sysmon_sleeping -> sysmon_kick()       /* the first M out of a fully idle scheduler */
        :: else
        fi
    :: else
    fi;
    t = 0;
    start_spinning();
    goto top;

found:
    /* found(): stop spinning; the last spinning M wakes another */
    if
    :: spinning ->
        spinning = 0;
        atomic { t = nmspinning; nmspinning-- };
        if
        :: t == 1 -> wakep()
        :: else
        fi;
        t = 0
    :: else
    fi;
    /* pt__execute: the G runs; it may arm a timer on this P */
    if
    :: atomic { garm > 0 && tmr[me] == 0 -> garm--; tmr[me] = 1 } -> wake_timers()
    :: true
    fi;
    goto top
}

/* The monitor: pt__sysmon_main's loop, sysmon_sleep and its netpoll. The
 * stuck-P work (waking an M for a stuck P's timers or queue, running them
 * itself, preemption) is left out: it only ever adds wake-ups. */
proctype Monitor()
{
    byte t, w, wk, sg, pu;
    bit got;
#ifdef MONPOLLS
    byte polls = MONPOLLS;
#endif
end_mon:
    do
    :: /* sysmon_sleep with every P idle: the seen read and the idle count */
        atomic { npidle >= NM -> smch = 0 };
        sysmon_sleeping = 1;
        if
        :: npidle >= NM ->                        /* looked at again */
            atomic {
                if
                :: smch -> skip
                :: else -> smparked = 1
                fi
            };
end_sleep:
            smparked == 0
        :: else
        fi;
        sysmon_sleeping = 0
    /* descriptors registered and nobody polled for 10 ms: any round */
#ifdef MONPOLLS
    :: nfds && polls > 0 ->
        polls--;
#else
    :: nfds ->
#endif
        poll_ready_fds();
        if
        :: got -> got = 0; gq++; wakep()          /* pt__fd_ready: Gs to the global queue */
        :: else
        fi
    od
}

/* The world: an outside thread and the kernel, each event once */
proctype Env()
{
    byte t, w, wk, sg, pu;
    bit g, fd, tm;
#ifndef EV_G
    g = 1;
#endif
#ifndef EV_FD
    fd = 1;
#endif
#ifndef EV_TIMER
    tm = 1;
#endif
    do
    :: !g -> g = 1; gq++; wakep()                 /* pt__g_put_runnable from outside */
    :: !fd -> fd = 1; fdready = 1
    :: !tm -> tm = 1;                              /* pt_timer_start on a P's heap, then its wake */
        if
        :: tmr[0] == 0 -> tmr[0] = 1
#if NM > 1
        :: tmr[1] == 0 -> tmr[1] = 1
#endif
        :: else -> goto armed
        fi;
        wake_timers();
armed:  skip
    :: g && fd && tm -> break
    od;
    env_done = 1
}

/* time: an armed timer comes due */
proctype Clock()
{
end_clock:
    do
    :: d_step { tmr[0] == 1 -> tmr[0] = 2; tick = 1 }
#if NM > 1
    :: d_step { tmr[1] == 1 -> tmr[1] = 2; tick = 1 }
#endif
    od
}

/* Nothing can move: every thread asleep with no deadline (the environment
 * done, no timer armed). Then no work may be left, and someone must be in
 * the netpoller to see a registered descriptor become ready. */
proctype Watch()
{
    timeout ->
    assert(NOWORK);
    assert(!nfds || polling)
}

ltl taken { <> [] (env_done && NOWORK) }

init
{
    atomic {
#ifdef FDS
        nfds = 1;
#endif
#ifdef G_ARMS
        garm = 1;
#endif
        run M(0);
#if NM > 1
        run M(1);
#endif
        run Monitor();
        run Env();
        run Clock()
#ifndef NOWATCH
        ;
        run Watch()
#endif
    }
}
