/* ptstress: the shared state of one design x scenario run, the violation
 * log, and the arming records every scenario checks its firings against. */
#ifndef PTSTRESS_STRESS_H
#define PTSTRESS_STRESS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "base/rng.h"

/* What can go wrong, one name each: the verdict counts by these, and the
 * tests expect them by name. */
enum viol_kind {
    V_DOUBLE,           /* an arming (a one-shot) fired twice */
    V_EARLY,            /* fired before its deadline (a tick before when + k*period) */
    V_LATE,             /* neither stopped nor superseded, not fired within the bound */
    V_FIRED_STOPPED,    /* a stop said it stopped this arming, and it fired */
    V_FIRED_SUPERSEDED, /* an arm said it replaced this pending arming, and it fired */
    V_UNFIRED,          /* a stop or arm said "not pending", yet the arming never fired */
    V_COUNT,            /* armings != firings + "was pending" answers (several threads at once) */
    V_BURST,            /* ticks of one arming back to back: missed periods re-fired */
    V_PHASE,            /* a tick for a time off its schedule, or one it owed skipped */
    V_TICK_STOPPED,     /* a tick started after the ticker's stop had returned */
    V_TICKS,            /* a ticker's tick count out of its range */
    V_MEMORY,           /* the design holds far more entries than live timers */
    V_LEAK,             /* library blocks still allocated after the engine was destroyed */
    V_INVARIANT,        /* the design's own check (pt_timers_verify) failed */
    V_SYNC,             /* a callback still ran after a stop that waits (stop_sync) returned */
    V_ERROR,            /* an arm failed, or the run could not be set up */
    V_HUNG,             /* the run did not end: a call into the design never returned */
    V_STALL,            /* work waited (bytes unread) with no progress: a lost wake-up */
    V_NKINDS,
};

extern const char *const viol_names[V_NKINDS];

struct stress_opts {
    int threads;   /* workers (Ps) */
    int outsiders; /* mutator threads that are not Ps */
    int timers;    /* modtimer/move: timer objects; ticker: tickers */
    pt_nanos duration;
    pt_nanos bound; /* how late a firing may be before it is a violation */
    /* --slack: each timer's window, [when, when + slack], on top of the
     * bound for lateness and never for earliness (the scenarios whose
     * designs take it: sched, as the scheduler's timer_slack) */
    pt_nanos slack;
    uint64_t seed;
    int progress_s; /* --soak: a progress line every so many seconds (0: none) */
    const char *argv0;
};

struct stress_run {
    const struct pt_engine *eng;
    const char *scenario;
    const struct stress_opts *o;
    void *e; /* the engine instance */
    atomic_ullong ops, firings, untracked;
    atomic_ullong excused; /* late checks the machine's own stalls explained */
    atomic_uint quiet_checks; /* mid-run checks with every mutator held (pool.c) */
    atomic_ullong viol[V_NKINDS];
    atomic_int printed; /* violation lines printed so far */
    /* the run phase's start: atomic, as the watchdog's thread reads it
     * in a hung run's violation line */
    _Atomic pt_nanos t0;
    const char *io; /* sched: the path its Gs' socket I/O took ("rings", "netpoller") */
};

/* Count a violation and print it (the first few per run) with what was
 * expected, what was seen and the command that reproduces the run. */
void stress_violation(struct stress_run *r, enum viol_kind k, long timer, uint64_t arming,
                      const char *expected, const char *observed, ...)
    __attribute__((format(printf, 6, 7)));
uint64_t stress_violations(const struct stress_run *r);

/* The machine-stall witness (witness.c): one thread for the process,
 * sleeping 1 ms at a time. witness_gap: the longest it overslept among
 * its sleeps that overlapped [from, to] (0: none over 4 ms), and when
 * that sleep ended. witness_stalled: how long, in all, the machine ran
 * nothing within [from, to] (its oversleeps of 4 ms or more). Both look
 * only at the last few thousand oversleeps, far more than a check's window
 * holds. witness_tally: how many oversleeps ended since the last
 * witness_tally_begin, and the longest, however many there were. */
void witness_start(void);
void witness_stop(void);
pt_nanos witness_gap(pt_nanos from, pt_nanos to, pt_nanos *at);
pt_nanos witness_stalled(pt_nanos from, pt_nanos to);
void witness_tally_begin(void);
unsigned long witness_tally(pt_nanos *longest);
/* The run's own pauses (pool.c holds every mutator for a quiescent
 * check now and then), begun and ended by the main thread; how long they
 * held the run within [from, to]. stress_overdue allows them. */
void witness_pause_begin(void);
void witness_pause_end(void);
pt_nanos witness_paused(pt_nanos from, pt_nanos to);

/* Whether something due at `due` and still owed at `at` is past what the
 * check allows it (`allowed`: the bound, and the run's own stalls), once
 * the machine's stalls within [due, at] are added to that. A lateness
 * that only those stalls explain counts in r->excused. */
bool stress_overdue(struct stress_run *r, pt_nanos due, pt_nanos at, pt_nanos allowed);

/* How long a run lets due timers fire, once nothing is armed any more,
 * before its final checks: far above a firing's usual lateness, and the
 * checks that follow still allow the whole bound. */
#define STRESS_DRAIN ((pt_nanos)200000000)

/* Each scenario: runs for o->duration, checks online and at its end. */
void sc_modtimer(struct stress_run *r);
void sc_move(struct stress_run *r);
void sc_ticker(struct stress_run *r);
void sc_churn(struct stress_run *r);
/* Inside the scheduler (sc_sched.c; where it is built: PTSTRESS_HAVE_SCHED).
 * Its designs are sched-perp, sched-lheap and sched-tt, engines that hold
 * a name only: stress_sched_design(i) is the i-th (NULL past the last), and only the
 * sched scenarios run them (sched, and vtime on the virtual clock:
 * sc_sched_vtime.c), as only the other scenarios run the rest. */
void sc_sched(struct stress_run *r);
void sc_sched_vtime(struct stress_run *r);
const struct pt_engine *stress_sched_design(int i);
bool stress_is_sched(const struct pt_engine *e);

/* Wait for the end of the run, calling scan(ctx) every 10 ms and printing
 * progress lines meanwhile. */
void stress_wait(struct stress_run *r, pt_nanos end, void (*scan)(void *ctx), void *ctx);
/* The process's resident size, for progress lines. */
double stress_rss_mib(void);

static inline void stress_sleep(pt_nanos d)
{
    extern void bench_sleep_until(pt_nanos until);
    bench_sleep_until(pt_nanotime() + d);
}

/* ---- arming records ---------------------------------------------------
 * A timer's armings go round a ring of records. A record's word packs the
 * arming's sequence number with its state, so a firing checks and moves
 * the state with one CAS, and a firing of an arming whose record was
 * reused (one far older than the ring) is counted as untracked, never
 * misread as another's. */
enum arm_state {
    A_PENDING = 1, /* armed; nothing said otherwise yet */
    A_CLAIMED,     /* a stop or arm said "not pending": it must have fired */
    A_FIRED,
    A_STOPPED,    /* a stop said it stopped it */
    A_SUPERSEDED, /* an arm said it replaced it */
    A_OPENING,    /* arm_open is writing it; its fields are not this arming's yet */
};

#define ARM_RING 256u /* per timer: far more armings than can be in flight */

struct arm_rec {
    _Atomic uint64_t word; /* seq << 8 | state */
    _Atomic pt_nanos when; /* no firing of it comes before (re-arms: the earliest) */
    _Atomic pt_nanos when_hi; /* the latest of its re-arms' deadlines (modtimer) */
    _Atomic pt_nanos period;
    /* Re-arms of this arming by start or reset, which keep its callback
     * argument, whose firings are still owed (modtimer) */
    atomic_uint extra;
    _Atomic pt_nanos fired_at;   /* first firing (tickers: the last) */
    _Atomic pt_nanos stopped_at; /* tickers: when the stop returned */
    atomic_uint ticks, after_stop;
    _Atomic pt_nanos recent[3]; /* tickers: the last three ticks' times */
    _Atomic pt_nanos due;       /* tickers: the time the next tick must name (the design says) */
};

static inline uint64_t arm_word(uint64_t seq, enum arm_state s)
{
    return seq << 8 | s;
}

/* A new arming's record, written before the arming is handed to the
 * design (whose own synchronisation publishes it to the firing side).
 *
 * Several threads may open records of one ring at once: modtimer's
 * contended timers number their armings with a fetch_add and open them
 * with no lock of ours, and a thread preempted between numbering its
 * arming and publishing its record can find the arming ARM_RING later
 * writing the same record. Two writers interleaving there would leave a
 * record whose word names one arming and whose `when` is the other's:
 * that arming's firing then looks early (or late) by the gap between the
 * two deadlines. So a writer
 * first claims the record, with a CAS from an older arming's word to its
 * own in A_OPENING, and only the claimer writes the fields. An arming that
 * finds the record being written, or already another's newer than it,
 * gives it up: NULL, and its firing is counted as untracked, as when a
 * record is reused (the word names another arming). A firing's check is
 * sound against the claim: its CAS on the word fails once the record is
 * claimed, so a `when` it read from a later writer is never used (the
 * claim's acquire keeps the field stores after it, the firing's CAS
 * publishes its earlier loads). */
static inline struct arm_rec *arm_open_owing(struct arm_rec *ring, unsigned n, uint64_t seq,
                                             pt_nanos when, pt_nanos period, atomic_uint *owed)
{
    struct arm_rec *a = &ring[seq % n];
    uint64_t w = atomic_load_explicit(&a->word, memory_order_relaxed);
    do {
        if (w >> 8 > seq || (w & 0xff) == A_OPENING)
            return NULL;
    } while (!atomic_compare_exchange_weak_explicit(&a->word, &w, arm_word(seq, A_OPENING),
                                                    memory_order_acquire, memory_order_relaxed));
    /* The old arming's re-arm firings still owed go to the timer's count
     * once the word no longer names it: a late firing of it that finds
     * no extra left looks at the word again, waits out A_OPENING, and
     * pays the count (sc_modtimer.c's check). */
    if (owed) {
        unsigned e = atomic_exchange_explicit(&a->extra, 0, memory_order_acq_rel);
        if (e)
            atomic_fetch_add(owed, e);
    }
    atomic_store_explicit(&a->when, when, memory_order_relaxed);
    atomic_store_explicit(&a->when_hi, when, memory_order_relaxed);
    atomic_store_explicit(&a->extra, 0, memory_order_relaxed);
    atomic_store_explicit(&a->period, period, memory_order_relaxed);
    atomic_store_explicit(&a->fired_at, 0, memory_order_relaxed);
    atomic_store_explicit(&a->stopped_at, 0, memory_order_relaxed);
    atomic_store_explicit(&a->ticks, 0, memory_order_relaxed);
    atomic_store_explicit(&a->after_stop, 0, memory_order_relaxed);
    atomic_store_explicit(&a->due, when, memory_order_relaxed);
    for (int i = 0; i < 3; i++)
        atomic_store_explicit(&a->recent[i], 0, memory_order_relaxed);
    /* Publishes the fields to whoever reads the word (acquire) after. */
    atomic_store_explicit(&a->word, arm_word(seq, A_PENDING), memory_order_release);
    return a;
}

static inline struct arm_rec *arm_open(struct arm_rec *ring, unsigned n, uint64_t seq,
                                       pt_nanos when, pt_nanos period)
{
    return arm_open_owing(ring, n, seq, when, period, NULL);
}

/* Move seq's record from state `from` to `to`; false, with the state it
 * found in *seen (0: the record is another arming's now), if not in it. */
static inline bool arm_move(struct arm_rec *ring, unsigned n, uint64_t seq, enum arm_state from,
                            enum arm_state to, enum arm_state *seen)
{
    struct arm_rec *a = &ring[seq % n];
    uint64_t w = arm_word(seq, from);
    if (atomic_compare_exchange_strong(&a->word, &w, arm_word(seq, to)))
        return true;
    *seen = w >> 8 == seq ? (enum arm_state)(w & 0xff) : 0;
    return false;
}

/* A callback's argument: which timer (or worker), which arming. */
static inline void *arm_arg(uint64_t timer, uint64_t seq)
{
    return (void *)(uintptr_t)(timer << 44 | seq);
}
static inline uint64_t arg_timer(void *arg)
{
    return (uintptr_t)arg >> 44;
}
static inline uint64_t arg_seq(void *arg)
{
    return (uintptr_t)arg & (((uint64_t)1 << 44) - 1);
}

#endif
