/* The sched scenario's parts: sc_sched.c runs the scheduler (its Ps
 * added and removed at random, sleeping Gs, stoppers that are plain
 * threads), sc_sched_time.c holds the Gs that own Go time-package
 * objects: a Timer read through select, an AfterFunc, a Ticker;
 * sc_sched_waiters.c a Timer whose channel several Gs wait on at once;
 * sc_sched_io.c the Gs' socket I/O and the plain thread's sleeps. */
#ifndef PTSTRESS_SC_SCHED_H
#define PTSTRESS_SC_SCHED_H

#include "ptimer/sched.h"
#include "stress.h"

#define SS_MS ((pt_nanos)1000000)

struct ss;

/* A Timer read by one owner G through a select with a deadline (beside a
 * channel its stoppers poke), stopped by other Gs and threads meanwhile.
 * Only the owner arms it, so every value it receives belongs to the
 * current arming, and an arming ends exactly one way: its value received,
 * or a stop or the re-arm answering 1. */
struct ss_tm {
    struct ss *ss;
    pt_time_timer *t;
    pt_chan *c, *poke;
    atomic_int ready; /* t exists: stoppers may call on it */
    atomic_int lock;  /* ss_lock: guards what follows, orders stops with re-arms */
    uint64_t cur;     /* the current arming, 1 onwards */
    pt_nanos start;   /* the clock before the call that armed it */
    pt_nanos armed;   /* ... and after it: a value fired before is stale */
    pt_nanos when;    /* its deadline */
    int recv, ans1;   /* its values received; stops that answered 1 */
    bool stopped, late_seen;
    uint64_t rng;
};

/* An AfterFunc, armed and stopped by its owner G: f runs once per arming
 * that no stop or re-arm answered 1 for, never before that arming's
 * deadline. f cannot name its arming (Reset keeps f and arg), so the
 * checks count: runs never exceed `expect`, and reach it in time. And
 * the i-th f to start is held to the i-th owed arming's deadline: an
 * arming is re-armed or stopped with answer 0 only once its f was taken,
 * so the owed deadlines never decrease and the armings are taken in
 * order, and when the i-th f starts, i armings have been taken: the i-th
 * deadline has passed, whichever arming that f is. */
#define SS_AF_RING 1024u
struct ss_af {
    struct ss *ss;
    pt_time_timer *t;
    pt_chan *done;            /* f's note that it ran (the owner waits on it) */
    atomic_ullong runs;       /* f's count; f's last touch of this struct */
    uint64_t expect;          /* armings whose f must run (the owner's) */
    pt_nanos hi_when;         /* the latest deadline whose f may still run */
    atomic_ullong started;    /* f's calls begun */
    /* The owed armings' deadlines by their order among the owed (the
     * owner's; the last may not be owed yet while a reset's answer is
     * awaited: then the earlier of the two, see af_call) */
    _Atomic pt_nanos owed_when[SS_AF_RING];
    bool last_owed;           /* the last arming is owed (no stop said 1 for it) */
    bool late_seen;           /* reported late; until the runs catch up */
    uint64_t rng;
};

/* A Ticker read by its owner G, reset with new periods and stopped. The
 * n-th tick received since the (re)start at `start` fired no earlier than
 * start + n * period (ticks are skipped, never bunched), and no tick fired
 * before a stop or reset returned is received after it. */
struct ss_tk {
    struct ss *ss;
    pt_time_ticker *t;
    pt_chan *c;
    pt_nanos start, armed, period;
    pt_nanos first, last, read_at; /* tick 1's value, the last one, when it was read */
    uint64_t n;
    bool running, late_seen;
    uint64_t rng;
};

/* A Timer whose channel several Gs read at once (sc_sched_waiters.c):
 * one owner G arms, stops and resets it; SS_TW_WAITERS Gs wait on its
 * channel through pt_select: the first, the stayer, with no deadline and
 * only the channel and `quit` (closed by the owner at the run's end);
 * the others, the leavers, with short deadlines of their own (some with
 * none) and `poke`, which sends them away for a while and back.
 * Only the owner arms it, and it ends each arming exactly one way: its
 * value received by one waiter, or the stop or reset that ended it
 * answering 1 (a stop answering 0 said the value was handed to a G). A
 * receipt is recorded after pt_select returns, so the oracle counts:
 * `owed` armings ended with 0, `got` values recorded; got never exceeds
 * owed + (the current arming still open), and after a 0 the owner waits,
 * within the bound, for got to reach owed. Each value is the arming's due
 * time exactly (sched.h), inside [lo, hi] of the arming that sent it
 * (lo, hi: the clock before and after the call that armed it, plus d):
 * one of an arming a 1 ended is a fired-after-stop. And a value due while
 * the stayer waits is received within the bound, whoever of the waiters
 * leave meanwhile (Go: the others still get it). */
#define SS_TW_WAITERS 4
#define SS_TW_RING 16
enum { SS_TW_OPEN, SS_TW_DELIVERED, SS_TW_STOPPED };
struct ss_tw;
struct ss_tw_w {
    struct ss_tw *m;
    int idx; /* 0: the stayer */
    uint64_t rng;
};
struct ss_tw {
    struct ss *ss;
    pt_time_timer *t;
    pt_chan *c, *poke, *quit, *note; /* note: a waiter recorded a value */
    atomic_int ready;                /* t and c exist: the waiters may select */
    atomic_int lock;                 /* ss_lock: guards what follows */
    uint64_t cur;                    /* the current arming, 1 onwards */
    struct {
        pt_nanos lo, hi; /* its value's time lies within */
        int end;         /* SS_TW_OPEN, or how it ended */
    } arm[SS_TW_RING];   /* by arming number */
    uint64_t owed, got;  /* armings whose value was delivered; values recorded */
    bool open, late_seen;
    /* the stayer: in its select since (0: not), in its n-th select */
    _Atomic pt_nanos stay_since;
    _Atomic uint64_t stay_n;
    _Atomic pt_nanos away_until; /* poked leavers stay away until then */
    struct ss_tw_w w[SS_TW_WAITERS];
    uint64_t rng;
};

struct ss {
    struct stress_run *r;
    pt_sched *s;
    atomic_int stop;  /* the run is over: Gs leave their loops */
    atomic_int alive; /* the scenario's Gs still in their loops */
    int ntm, naf, ntk, ntw;
    struct ss_tm *tm;
    struct ss_af *af;
    struct ss_tk *tk;
    struct ss_tw *tw;
};

/* The timer mode of a sched design (stress_sched_design). */
enum pt_timer_mode stress_sched_mode(const struct pt_engine *e);

/* A lock for Gs and plain threads alike. A timer's stop may yield while it
 * waits out a firing (sched/time.c), so a holder can be a parked G: a
 * waiter yields too, where a blocking lock would hold its M, and on one P
 * the holder, for ever. */
void ss_lock(atomic_int *l);
void ss_unlock(atomic_int *l);

/* A duration as the scenario picks them: mostly 0.1-3 ms, some now (0 or
 * negative: Go's "now"), some far (20-50 ms: stopped or reset first). */
pt_nanos ss_pick_d(uint64_t x);

/* The owners (Gs: arg is their object), a stop from any G or thread, and
 * the final checks (main thread, once every G has left its loop). */
void ss_tm_owner(void *arg);
void ss_tm_stop(struct ss_tm *m);
void ss_tm_final(struct ss_tm *m);
void ss_af_owner(void *arg);
void ss_af_final(struct ss_af *m);
void ss_tk_owner(void *arg);
void ss_tk_final(struct ss_tk *m);
/* The timer with several waiters: the owner and the waiters (Gs; arg is
 * the object, and its w[i]), the final checks (main thread, once every G
 * has left its loop; they free the object's timer and channels). */
bool ss_tw_init(struct ss_tw *m, struct ss *ss, uint64_t seed);
void ss_tw_owner(void *arg);
void ss_tw_waiter(void *arg);
void ss_tw_final(struct ss_tw *m);

/* The I/O Gs (sc_sched_io.c): nplain socketpairs, a reader G each with
 * a short deadline or none, a writer G on the even ones and a plain
 * thread writing to the odd ones; and the burst pairs, whose readers
 * have no deadline and which the plain thread writes to all at once; a
 * G writing with deadlines to a pair with small buffers that the plain
 * thread drains only now and then (its writes time out); a G accepting
 * with deadlines on a listener the plain thread connects to now and then;
 * and the plain thread's own pauses, pt_sleep and pt_sleep_until from a
 * thread that is not a G, checked; go starts a G counted in ss->alive.
 * scan is the watchdog (the main thread, every 10 ms); stop wakes the
 * readers once ss->stop is set; free makes the final counts (bytes the
 * writes said went out against those read, connections made against
 * those accepted) and closes the descriptors once every G has left its
 * loop. */
bool ss_io_start(struct ss *ss, int nplain, bool (*go)(struct ss *, void (*)(void *), void *));
void ss_io_scan(struct ss *ss, pt_nanos now);
void ss_io_stop(void);
void ss_io_free(void);

#endif
