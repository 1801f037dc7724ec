/* A witness of the machine's stalls: a thread that sleeps 1 ms at a time
 * and keeps the sleeps that ended far later than asked. A late firing
 * printed beside a stall of the same size that this thread also saw was
 * a machine that ran nothing of the process (a VM's CPUs taken away, a
 * host under load): a sleeper woken from a sleep is the first thread the
 * kernel runs again. A late firing with no such stall beside it is the
 * design's.
 *
 * What the checks allow a firing is what the run can promise: the bound,
 * and the stalls the run made itself. A stall of the whole machine is a
 * stall nobody in the process made, so a check adds the time the witness
 * saw the machine stalled within the firing's window to what it allows
 * (stress_overdue). The witness is a plain thread sleeping in the kernel,
 * not a timer of any design: a design that loses a wake-up stalls its own
 * timers, never this thread, and stays late past the excuse. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "stress.h"

#define SLEEP_NS ((pt_nanos)1000000)
/* An oversleep worth keeping: a tick of HZ=250, and more. */
#define KEEP_NS ((pt_nanos)4000000)
#define KEPT 4096

static struct {
    pthread_mutex_t lock;
    pthread_t thread;
    atomic_bool stop, running, watching;
    /* the span under way began then: a stall that has just ended is
     * seen by whoever looks before the witness itself wakes */
    _Atomic pt_nanos since;
    struct gap {
        pt_nanos end, over;
    } kept[KEPT];
    unsigned next; /* the ring's next slot (lock) */
    unsigned n;    /* slots filled (lock) */
    /* The run's own count, apart from the ring: the ring holds what the
     * checks look back over, a run can outlast it (lock) */
    unsigned long tally;
    pt_nanos tally_longest;
} w = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *watch(void *arg)
{
    (void)arg;
    /* Each sleep's span starts where the last one's ended: a stall that
     * falls between two sleeps is seen too. */
    pt_nanos t0 = pt_nanotime();
    atomic_store(&w.since, t0);
    atomic_store(&w.watching, true);
    while (!atomic_load(&w.stop)) {
        struct timespec ts = {0, (long)SLEEP_NS};
        nanosleep(&ts, NULL);
        pt_nanos t1 = pt_nanotime();
        /* kept, and the next span begun, at once: a look sees it one way */
        pt_nanos over = t1 - t0 - SLEEP_NS;
        pthread_mutex_lock(&w.lock);
        if (over >= KEEP_NS) {
            w.kept[w.next] = (struct gap){t1, over};
            w.next = (w.next + 1) % KEPT;
            if (w.n < KEPT)
                w.n++;
            w.tally++;
            if (over > w.tally_longest)
                w.tally_longest = over;
        }
        atomic_store(&w.since, t1);
        pthread_mutex_unlock(&w.lock);
        t0 = t1;
    }
    atomic_store(&w.since, 0);
    return NULL;
}

void witness_start(void)
{
    if (atomic_load(&w.running))
        return;
    atomic_store(&w.stop, false);
    atomic_store(&w.watching, false);
    if (pthread_create(&w.thread, NULL, watch, NULL) != 0)
        return;
    atomic_store(&w.running, true);
    /* a stall before its first sleep would go unseen */
    while (!atomic_load(&w.watching))
        sched_yield();
}

void witness_stop(void)
{
    if (!atomic_load(&w.running))
        return;
    atomic_store(&w.stop, true);
    pthread_join(w.thread, NULL);
    atomic_store(&w.running, false);
}

pt_nanos witness_gap(pt_nanos from, pt_nanos to, pt_nanos *at)
{
    pt_nanos best = 0;
    *at = 0;
    pthread_mutex_lock(&w.lock);
    for (unsigned i = 0; i < w.n; i++) {
        const struct gap *g = &w.kept[i];
        /* the sleep overlapped the window */
        if (g->end >= from && g->end - g->over - SLEEP_NS <= to && g->over > best) {
            best = g->over;
            *at = g->end;
        }
    }
    pt_nanos since = atomic_load(&w.since), now = pt_nanotime();
    if (since && since <= to && now - since - SLEEP_NS > best && now - since - SLEEP_NS >= KEEP_NS) {
        best = now - since - SLEEP_NS; /* still asleep: overslept this much so far */
        *at = now;
    }
    pthread_mutex_unlock(&w.lock);
    return best;
}

/* [lo, hi] within [from, to]: how much of it lies there. */
static pt_nanos overlap(pt_nanos lo, pt_nanos hi, pt_nanos from, pt_nanos to)
{
    if (lo < from)
        lo = from;
    if (hi > to)
        hi = to;
    return hi > lo ? hi - lo : 0;
}

pt_nanos witness_stalled(pt_nanos from, pt_nanos to)
{
    pt_nanos sum = 0;
    pthread_mutex_lock(&w.lock);
    for (unsigned i = 0; i < w.n; i++)
        sum += overlap(w.kept[i].end - w.kept[i].over, w.kept[i].end, from, to);
    pt_nanos since = atomic_load(&w.since), now = pt_nanotime();
    if (since && now - since - SLEEP_NS >= KEEP_NS)
        sum += overlap(since + SLEEP_NS, now, from, to); /* a stall still under way */
    pthread_mutex_unlock(&w.lock);
    return sum;
}

void witness_tally_begin(void)
{
    pthread_mutex_lock(&w.lock);
    w.tally = 0;
    w.tally_longest = 0;
    pthread_mutex_unlock(&w.lock);
}

unsigned long witness_tally(pt_nanos *longest)
{
    pthread_mutex_lock(&w.lock);
    unsigned long n = w.tally;
    *longest = w.tally_longest;
    pthread_mutex_unlock(&w.lock);
    return n;
}

/* The pauses the pool made (pool.c's mid-run checks): a ring of spans,
 * written by the main thread alone, read by any checker. A span under
 * way has no end yet (0): it counts up to the reader's `to`. */
#define PAUSES 64
static struct {
    _Atomic pt_nanos from[PAUSES], to[PAUSES];
    atomic_uint n;
} pauses;

void witness_pause_begin(void)
{
    unsigned i = atomic_load_explicit(&pauses.n, memory_order_relaxed) % PAUSES;
    atomic_store_explicit(&pauses.to[i], 0, memory_order_relaxed);
    atomic_store_explicit(&pauses.from[i], pt_nanotime(), memory_order_relaxed);
    atomic_fetch_add_explicit(&pauses.n, 1, memory_order_release);
}

void witness_pause_end(void)
{
    unsigned i = (atomic_load_explicit(&pauses.n, memory_order_relaxed) - 1) % PAUSES;
    atomic_store_explicit(&pauses.to[i], pt_nanotime(), memory_order_release);
}

pt_nanos witness_paused(pt_nanos from, pt_nanos to)
{
    unsigned n = atomic_load_explicit(&pauses.n, memory_order_acquire);
    pt_nanos sum = 0;
    for (unsigned k = 0; k < n && k < PAUSES; k++) {
        unsigned i = (n - 1 - k) % PAUSES;
        pt_nanos a = atomic_load_explicit(&pauses.from[i], memory_order_relaxed);
        pt_nanos b = atomic_load_explicit(&pauses.to[i], memory_order_acquire);
        if (b == 0 || b > to)
            b = to;
        if (a < from)
            a = from;
        if (b > a)
            sum += b - a;
    }
    return sum;
}

bool stress_overdue(struct stress_run *r, pt_nanos due, pt_nanos at, pt_nanos allowed)
{
    /* the pool's own pauses are the run's stalls: allowed, and not the
     * machine's (not counted as excused) */
    allowed += witness_paused(due, at);
    /* a window asked for (--slack): late is past its end (the few checks
     * that are not a timer's, a stall's or a G's exit, are that much
     * looser too) */
    allowed += r->o->slack;
    if (at - due <= allowed)
        return false;
    if (at - due > allowed + witness_stalled(due, at))
        return true;
    atomic_fetch_add_explicit(&r->excused, 1, memory_order_relaxed);
    return false;
}
