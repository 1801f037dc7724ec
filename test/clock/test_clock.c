/* pt_nanotime against CLOCK_MONOTONIC, on whichever source it reads: the
 * TSC line where this machine has one, clock_gettime otherwise or when
 * PT_CLOCK says so. Every loop is bounded by a count and by time. */
#define _GNU_SOURCE /* pthread affinity */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "base/clock_select.h"
#include "base/futex.h"
#include "base/tsc.h"
#include "ptimer/clock.h"

/* How far pt_nanotime may be from CLOCK_MONOTONIC read just before and
 * just after it. The TSC line's error is a few tens of ns once its rate
 * is measured over a few re-anchors, and under 1 us before (tsc.c); 5 us
 * leaves room for a pair read on a loaded machine, and is still 20x below
 * the timer slack every ptbench worker sets (not that it matters to a
 * timer: a deadline a few us off is a timer a few us late). */
#define BOUND_NS 5000

static pt_nanos mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (pt_nanos)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Reads for `span` ns of CLOCK_MONOTONIC (at most 20 M reads): each within
 * BOUND_NS of the CLOCK_MONOTONIC reads around it, none below the last.
 * Returns the largest error seen. */
static pt_nanos agreement(pt_nanos span)
{
    pt_nanos worst = 0, last = pt_nanotime(), end = mono() + span;
    for (long i = 0; i < 20000000; i++) {
        pt_nanos a = mono(), p = pt_nanotime(), b = mono();
        CHECK(p >= last);
        last = p;
        if (p < a - BOUND_NS || p > b + BOUND_NS) {
            fprintf(stderr, "pt_nanotime %lld outside [%lld, %lld] +- %d (source %d)\n",
                    (long long)p, (long long)a, (long long)b, BOUND_NS, (int)pt_clock_source());
            abort();
        }
        pt_nanos e = p < a ? a - p : p > b ? p - b : 0;
        if (e > worst)
            worst = e;
        if (b > end)
            break;
    }
    return worst;
}

void test_reads_agree_with_clock_monotonic_within_bound(void)
{
    /* 300 ms: the first calibration's slope and 30 re-anchors */
    pt_nanos worst = agreement(300000000);
    printf("     source %s, largest error %lld ns (bound %d)\n",
           pt_clock_source() == PT_CLOCK_TSC ? "tsc" : "monotonic", (long long)worst, BOUND_NS);
}

/* Each thread reads the latest value any thread published, then the
 * clock, then publishes its own if larger. A thread's own reads must never
 * go back: they cross every re-anchor, so a line that stepped back at one
 * shows here. Another thread's published value may be ahead of a later
 * read by at most SKEW_NS: the reads are ordered (the publication happens
 * before the read, and the read's counter is taken after the load that
 * saw it), but two cores' counters are not the same counter. On a VM each
 * vCPU's counter is its host CPU's plus an offset, and the host moves
 * vCPUs, so the offset between two changes from run to run and can
 * outgrow the fastest hand-off between them, and then a read on one lands
 * a few ns behind one published by the other. CLOCK_MONOTONIC reads the
 * same counter and inherits the same skew; the line adds nothing to it.
 * What the bound cannot tell from skew (a read misordered by less than
 * SKEW_NS) is left to the check within each thread, which sees every
 * re-anchor too. */
#define SKEW_NS 250
static _Atomic int64_t published;
enum { THREADS = 4 };

static void *backwards_worker(void *arg)
{
    long reads = *(long *)arg;
    pt_nanos mine = 0;
    for (long i = 0; i < reads; i++) {
        /* acquire: pairs with the release CAS below on another thread */
        int64_t seen = atomic_load_explicit(&published, memory_order_acquire);
        pt_nanos now = pt_nanotime();
        if (now < mine || now < seen - SKEW_NS) {
            fprintf(stderr,
                    "source %s: read %lld after %lld was published (own last %lld, skew "
                    "allowed %d)\n",
                    pt_clock_source() == PT_CLOCK_TSC ? "tsc" : "monotonic", (long long)now,
                    (long long)seen, (long long)mine, SKEW_NS);
            abort();
        }
        mine = now;
        while (seen < now && !atomic_compare_exchange_weak_explicit(
                                 &published, &seen, now, memory_order_release,
                                 memory_order_acquire))
            ;
    }
    return NULL;
}

static void never_backwards(void)
{
    /* enough reads to cross several re-anchors (10 ms each) */
#ifdef PT__SANITIZED
    long reads = 200000;
#else
    long reads = 2000000;
#endif
    atomic_store(&published, 0);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, backwards_worker, &reads), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(th[i], NULL), 0);
    CHECK(atomic_load(&published) > 0);
}

void test_reads_never_go_backwards_across_threads(void)
{
    never_backwards();
}

void test_source_is_the_one_pt_clock_asks_for(void)
{
    const char *spec = getenv("PT_CLOCK");
    enum pt_clock_source src = pt_clock_source();
    int why = pt_clock_fallback();
    if (spec != NULL && strcmp(spec, "monotonic") == 0) {
        CHECK_EQ(src, PT_CLOCK_MONOTONIC);
        CHECK_EQ(why, 0);
    } else if (spec != NULL && strcmp(spec, "tsc") == 0) {
        /* forced: only the architecture can refuse */
        int can = pt__tsc_probe(1);
        CHECK_EQ(src, can == 0 ? PT_CLOCK_TSC : PT_CLOCK_MONOTONIC);
        CHECK_EQ(why, can);
    } else if (spec == NULL || spec[0] == '\0' || strcmp(spec, "auto") == 0) {
        int can = pt__tsc_probe(0);
        CHECK_EQ(src, can == 0 ? PT_CLOCK_TSC : PT_CLOCK_MONOTONIC);
        CHECK_EQ(why, can);
    } else {
        CHECK_EQ(why, -EINVAL); /* a name of no source: chosen as if unset */
        CHECK_EQ(src, pt__tsc_probe(0) == 0 ? PT_CLOCK_TSC : PT_CLOCK_MONOTONIC);
    }
    printf("     PT_CLOCK=%s: source %s, fallback %d\n", spec ? spec : "(unset)",
           src == PT_CLOCK_TSC ? "tsc" : "monotonic", why);
}

/* Both sources in one process, whatever PT_CLOCK says: the fallback is
 * tested on a machine with a counter, and the counter wherever one is. */
void test_each_source_agrees_and_never_goes_backwards(void)
{
    pt__clock_select("monotonic");
    CHECK_EQ(pt_clock_source(), PT_CLOCK_MONOTONIC);
    agreement(50000000);
    never_backwards();
    pt__clock_select("tsc");
    if (pt__tsc_probe(1) != 0) {
        CHECK_EQ(pt_clock_source(), PT_CLOCK_MONOTONIC);
        CHECK_EQ(pt_clock_fallback(), -ENOSYS);
        return;
    }
    CHECK_EQ(pt_clock_source(), PT_CLOCK_TSC);
    agreement(100000000);
    never_backwards();
    pt__clock_select("bogus");
    CHECK_EQ(pt_clock_fallback(), -EINVAL);
}

/* The relaxed read, on each source: never past the ordered read after it
 * (that read waits for everything before it, the relaxed counter read
 * included), and trailing the ordered read before it by less than the
 * bound (it may be taken a little early, never long before). */
static void relaxed_between(void)
{
    for (long i = 0; i < 2000000; i++) {
        pt_nanos before = pt_nanotime(), r = pt_nanotime_relaxed(), after = pt_nanotime();
        if (r > after || r < before - BOUND_NS) {
            fprintf(stderr, "relaxed %lld outside [%lld - %d, %lld] (source %d)\n", (long long)r,
                    (long long)before, BOUND_NS, (long long)after, (int)pt_clock_source());
            abort();
        }
    }
}

void test_relaxed_reads_trail_the_ordered_ones_by_less_than_the_bound(void)
{
    pt__clock_select("monotonic");
    relaxed_between();
    pt__clock_select("tsc");
    if (pt__tsc_probe(1) == 0) {
        CHECK_EQ(pt_clock_source(), PT_CLOCK_TSC);
        relaxed_between();
    }
    pt__clock_select(NULL);
}

/* The line's own tests: x86-64 only (elsewhere there is no counter, and
 * the probe says so). Each selects the counter afresh. */
static int select_tsc(void)
{
    pt__clock_select("tsc");
    if (pt__tsc_probe(1) != 0) {
        CHECK_EQ(pt_clock_source(), PT_CLOCK_MONOTONIC);
        return 0;
    }
    CHECK_EQ(pt_clock_source(), PT_CLOCK_TSC);
    return 1;
}

void test_counter_behind_the_anchor_reads_the_anchor(void)
{
    if (!select_tsc())
        return;
    uint64_t bt = atomic_load(&pt__tsc.base_tsc), m = atomic_load(&pt__tsc.mult);
    int64_t bn = atomic_load(&pt__tsc.base_ns);
    uint32_t seq = atomic_load(&pt__tsc.seq);
    /* A counter 1000 cycles before the anchor (another core's, behind) */
    CHECK_EQ(pt__tsc_slow(bt - 1000, seq, bt, bn, m), bn);
    CHECK_EQ(atomic_load(&pt__tsc.seq), seq); /* no re-anchor for it */
}

/* Ages the line by `cycles` (as if nobody had read the clock for that
 * long) and shifts it by `shift_ns`, then reads until the next re-anchor. */
static void age_line(uint64_t cycles, int64_t shift_ns)
{
    atomic_store(&pt__tsc.base_tsc, atomic_load(&pt__tsc.base_tsc) - cycles);
    atomic_store(&pt__tsc.base_ns,
                 atomic_load(&pt__tsc.base_ns) -
                     (int64_t)(((unsigned __int128)cycles * atomic_load(&pt__tsc.mult)) >> 32) +
                     shift_ns);
}

/* Reads until one re-anchors the stale line and returns what it read. A
 * read whose (counter, clock) pairing was interrupted answers from the
 * line as it is and leaves the re-anchor to the next (tsc.c): on a loaded
 * machine the first read may be such a one. */
static pt_nanos read_until_reanchored(uint32_t seq)
{
    pt_nanos p = 0;
    for (int i = 0; i < 1000 && atomic_load(&pt__tsc.seq) == seq; i++)
        p = pt_nanotime();
    CHECK_EQ(atomic_load(&pt__tsc.seq), seq + 2); /* one re-anchor, count even */
    return p;
}

void test_stale_line_is_reanchored_continuously(void)
{
    if (!select_tsc())
        return;
    agreement(20000000);
    pt_nanos before = pt_nanotime(); /* may re-anchor: the count is read after it */
    uint32_t seq = atomic_load(&pt__tsc.seq);
    /* older than a refresh period, and past the 64-bit product's range */
    age_line(pt__tsc.refresh_cycles * 1000, 0);
    pt_nanos after = read_until_reanchored(seq);
    CHECK(after >= before);
    CHECK(pt_nanotime() - mono() < BOUND_NS);
    agreement(20000000);
}

/* A signal that arrives while a re-anchor holds the count odd is held
 * off until the count is even again: every reader waits for that writer,
 * so a handler on its thread that read the clock would wait for itself,
 * and the scheduler's preemption, switching the thread's stack away,
 * would stall every reader (seen on 16 cores). The hook raises a signal
 * inside the write; its handler reads the clock and the count. */
static atomic_int in_write_signals;
static atomic_uint seq_in_handler;

static void note_signal(int sig)
{
    (void)sig;
    uint32_t seq = atomic_load(&pt__tsc.seq);
    atomic_store(&seq_in_handler, seq);
    if (!(seq & 1))
        (void)pt_nanotime(); /* on an odd count it would spin for good */
    atomic_fetch_add(&in_write_signals, 1);
}

static void raise_in_write(void)
{
    raise(SIGUSR1);
}

void test_signals_wait_out_the_reanchor_write(void)
{
    if (!select_tsc())
        return;
    struct sigaction sa, was;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = note_signal;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR1, &sa, &was), 0);
    atomic_store(&in_write_signals, 0);
    (void)pt_nanotime();
    uint32_t seq = atomic_load(&pt__tsc.seq);
    pt__tsc_in_write = raise_in_write;
    age_line(pt__tsc.refresh_cycles * 2, 0);
    (void)pt_nanotime(); /* re-anchors, raising SIGUSR1 inside */
    pt__tsc_in_write = NULL;
    CHECK_EQ(atomic_load(&in_write_signals), 1);
    CHECK_EQ(atomic_load(&seq_in_handler), seq + 2); /* delivered after the write */
    CHECK_EQ(sigaction(SIGUSR1, &was, NULL), 0);
}

/* A real-time reader that preempts the re-anchoring thread on its CPU
 * must let it finish: a yield hands the CPU only to threads of its own
 * class, so the reader's wait sleeps after a while (pt__wait_other). With
 * yields alone the reader spun until real-time throttling let the writer
 * back, 0.95 s a second here (the scheduler's monitor, made real-time by
 * pt_sched_set_monitor_priority, reads the clock). Needs the privilege to
 * make a SCHED_FIFO thread; says so and returns without it. */
static _Atomic uint32_t rt_go;
static atomic_llong rt_waited;

static void *rt_reader(void *arg)
{
    (void)arg;
    while (atomic_load(&rt_go) == 0)
        pt__futex_wait(&rt_go, 0, 0);
    pt_nanos a = mono();
    (void)pt_nanotime(); /* the count is odd: the writer is preempted mid-write */
    atomic_store(&rt_waited, mono() - a);
    return NULL;
}

static void wake_rt_reader(void)
{
    atomic_store(&rt_go, 1);
    pt__futex_wake(&rt_go, 1); /* it preempts this thread at once: same CPU, higher class */
}

void test_a_real_time_reader_lets_a_preempted_reanchor_finish(void)
{
    if (!select_tsc())
        return;
    cpu_set_t one, was;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    CHECK_EQ(pthread_getaffinity_np(pthread_self(), sizeof was, &was), 0);
    if (!CPU_ISSET(0, &was)) {
        printf("CPU 0 not ours: skipped\n");
        return;
    }
    pthread_attr_t at;
    struct sched_param sp = {.sched_priority = 1};
    CHECK_EQ(pthread_attr_init(&at), 0);
    CHECK_EQ(pthread_attr_setinheritsched(&at, PTHREAD_EXPLICIT_SCHED), 0);
    CHECK_EQ(pthread_attr_setschedpolicy(&at, SCHED_FIFO), 0);
    CHECK_EQ(pthread_attr_setschedparam(&at, &sp), 0);
    CHECK_EQ(pthread_attr_setaffinity_np(&at, sizeof one, &one), 0);
    CHECK_EQ(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
    atomic_store(&rt_go, 0);
    atomic_store(&rt_waited, -1);
    pthread_t t;
    int rc = pthread_create(&t, &at, rt_reader, NULL);
    pthread_attr_destroy(&at);
    if (rc == EPERM) {
        CHECK_EQ(pthread_setaffinity_np(pthread_self(), sizeof was, &was), 0);
        printf("no privilege for SCHED_FIFO: skipped\n");
        return;
    }
    CHECK_EQ(rc, 0);
    (void)pt_nanotime();
    pt__tsc_in_write = wake_rt_reader;
    age_line(pt__tsc.refresh_cycles * 2, 0);
    (void)pt_nanotime(); /* re-anchors, waking the reader inside the write */
    pt__tsc_in_write = NULL;
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(pthread_setaffinity_np(pthread_self(), sizeof was, &was), 0);
    long long waited = atomic_load(&rt_waited);
    printf("the real-time reader waited %lld us\n", waited / 1000);
    /* a liveness bound, not a speed one: microseconds against the
     * throttle's 950 ms */
    CHECK(waited >= 0 && waited < 300000000);
}

/* The error of one read against the CLOCK_MONOTONIC reads around it, from
 * the narrowest of a few tries (a preemption between the reads only widens
 * the window, and hides error). */
static pt_nanos error_now(void)
{
    pt_nanos best = INT64_MAX, e = 0;
    for (int i = 0; i < 8; i++) {
        pt_nanos a = mono(), p = pt_nanotime(), b = mono();
        if (b - a < best) {
            best = b - a;
            e = p < a ? p - a : p > b ? p - b : 0;
        }
    }
    return e;
}

/* A line 2 ms ahead (what a counter that jumped would give) cannot step
 * back: it is slowed by at most 5 % per re-anchor until it is back on
 * CLOCK_MONOTONIC, about 40 ms of reads later; time never goes back. */
void test_line_ahead_is_slowed_back_onto_clock_monotonic(void)
{
    if (!select_tsc())
        return;
    agreement(20000000);
    age_line(0, 2000000);
    CHECK(error_now() > 1900000);
    pt_nanos last = pt_nanotime(), end = mono() + 200000000;
    while (mono() < end) {
        pt_nanos p = pt_nanotime();
        CHECK(p >= last);
        last = p;
    }
    pt_nanos e = error_now();
    CHECK(e < BOUND_NS && e > -BOUND_NS);
    agreement(20000000);
}

/* A line 2 ms behind jumps forward at the next re-anchor: onto
 * CLOCK_MONOTONIC as read before it (a bound on the read, not on when it
 * ran, which a preemption may delay). */
void test_line_behind_jumps_forward_onto_clock_monotonic(void)
{
    if (!select_tsc())
        return;
    agreement(20000000);
    pt_nanos before = mono();
    uint32_t seq = atomic_load(&pt__tsc.seq);
    age_line(pt__tsc.refresh_cycles, -2000000); /* stale: the next read re-anchors */
    pt_nanos p = read_until_reanchored(seq);
    CHECK(p >= before - BOUND_NS);
    agreement(20000000);
}
