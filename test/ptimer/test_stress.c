/* Concurrency stress: two P threads check their own heaps on the real clock
 * while mutator threads stop, reset, modify and move a shared set of
 * timers, several threads on the same timer at once. Bounded by an op
 * count and a wall-clock cap; every arming carries a unique seq.
 *
 * Proves: no seq fires twice unless a reset re-armed it; every arming ends
 * in exactly one firing or one cancellation (per-timer accounting, exact
 * but for armings a concurrent stop_sync swallowed); no
 * timer is lost (after the mutators stop, every timer re-armed to "now"
 * fires exactly once); and the heap invariant and counters hold throughout
 * (pt_timers_verify from the P threads, then quiescent at the end). */
#include <pthread.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "ploop.h"
#include "util.h"

#ifdef PT__SANITIZED
#define STRESS_OPS 300000
#else
#define STRESS_OPS 1500000
#endif
#define STRESS_SECONDS 3
#define NTIMERS 64
#define NMUTATORS 3
#define MAXSEQ (NMUTATORS * STRESS_OPS + 4 * NTIMERS + 16)

static struct ploop ps[2];
static pt_timer timers[NTIMERS];

/* Per timer: exact accounting. Every arming (start/modify/reset that found
 * the timer not pending) ends in exactly one firing or one cancellation
 * (stop/stop_sync that found it pending), so at the end, with nothing
 * pending, armings == fires + cancels for every timer. */
static atomic_long armings[NTIMERS], cancels[NTIMERS], fires[NTIMERS];
/* Resets and starts (which keep the seq) started and finished on the
 * timer: the only ways a seq can be armed again. A re-arming of seq S must
 * finish after S's modify began and start before S's second firing. */
static atomic_long rearms_started[NTIMERS], rearms_done[NTIMERS];
/* stop_sync also stops armings that other threads make while it waits,
 * and reports one result. A stop_sync that returned 1 may have swallowed
 * any arming that took effect during it: those counted meanwhile, and
 * those whose call was still unfinished when it returned (an arming is
 * counted after its call returns; leaving those out, as this test once
 * did, failed it about once in 30 runs under ASan). arm_calls_begun goes
 * up before each arming call, arm_calls_done after its accounting. */
static atomic_long sync_slack[NTIMERS];
static atomic_long arm_calls_begun[NTIMERS], arm_calls_done[NTIMERS];

/* Per seq: a seq is armed once, by one modify; it may fire again only
 * after a reset (which keeps the seq) re-armed it. */
static _Atomic uint32_t *fired;
static atomic_long *rearms_at_arm;
static atomic_uint_fast64_t next_seq = 1;
static atomic_long final_fired;
static uintptr_t final_first_seq;
static atomic_bool final_phase;

static void on_fire(void *arg, uintptr_t seq)
{
    pt_timer *t = arg;
    long ti = t - timers;
    CHECK(ti >= 0 && ti < NTIMERS && seq > 0 && seq < MAXSEQ);
    atomic_fetch_add(&fires[ti], 1);
    uint32_t n = atomic_fetch_add(&fired[seq], 1) + 1;
    long resets = atomic_load(&rearms_started[ti]) - atomic_load(&rearms_at_arm[seq]);
    if (n > 1 + resets) {
        fprintf(stderr, "seq %lu of timer %ld fired %u times; resets since armed: %ld\n",
                (unsigned long)seq, ti, n, resets);
        abort();
    }
    if (atomic_load(&final_phase) && seq >= final_first_seq)
        atomic_fetch_add(&final_fired, 1);
}

/* modify with a fresh seq: a new arming (counted if it was not pending) */
static void arm_fresh(pt_timers *ts, int ti, pt_nanos when)
{
    uintptr_t seq = atomic_fetch_add(&next_seq, 1);
    CHECK(seq < MAXSEQ);
    atomic_store(&rearms_at_arm[seq], atomic_load(&rearms_done[ti]));
    atomic_fetch_add(&arm_calls_begun[ti], 1);
    int r = pt_timer_modify(ts, &timers[ti], when, 0, on_fire, &timers[ti], seq);
    CHECK(r == 0 || r == 1);
    if (r == 0)
        atomic_fetch_add(&armings[ti], 1);
    atomic_fetch_add(&arm_calls_done[ti], 1);
}

static void *mutator(void *arg)
{
    uint64_t rng = 0x9e3779b97f4a7c15ull * (uintptr_t)arg + 1;
    pt_nanos deadline = pt_nanotime() + STRESS_SECONDS * SECOND;
    for (long op = 0; op < STRESS_OPS; op++) {
        if ((op & 255) == 0 && pt_nanotime() > deadline)
            break;
        uint64_t r = pt__xorshift64(&rng);
        int ti = (int)(r % NTIMERS);
        pt_timer *t = &timers[ti];
        int pi = (r >> 8) & 1;
        pt_timers *ts = &ps[pi].ts;
        /* Mostly soon (fires while others mutate), some already due, some
         * an hour away. */
        pt_nanos now = pt_nanotime();
        pt_nanos when = now + (pt_nanos)((r >> 16) % 2000000) - 200000;
        if (((r >> 40) & 7) == 0)
            when = now + 3600 * SECOND;
        int res;
        switch ((r >> 32) % 16) {
        case 0: case 1: case 2: case 3: case 4:
            arm_fresh(ts, ti, when);
            break;
        case 5: case 6: case 7: case 8:
            res = pt_timer_stop(t);
            CHECK(res == 0 || res == 1);
            atomic_fetch_add(&cancels[ti], res);
            break;
        case 9: case 10: case 11:
            atomic_fetch_add(&rearms_started[ti], 1);
            atomic_fetch_add(&arm_calls_begun[ti], 1);
            res = pt_timer_reset(ts, t, when);
            atomic_fetch_add(&rearms_done[ti], 1);
            CHECK(res == 0 || res == 1);
            if (res == 0)
                atomic_fetch_add(&armings[ti], 1);
            atomic_fetch_add(&arm_calls_done[ti], 1);
            break;
        case 12: case 13:
        {
            long armed_before = atomic_load(&armings[ti]);
            res = pt_timer_stop_sync(t);
            CHECK(res == 0 || res == 1);
            atomic_fetch_add(&cancels[ti], res);
            if (res == 1) { /* one that cancelled nothing swallowed nothing */
                /* done first, begun last: a call finishing meanwhile is
                 * counted twice at worst, never missed */
                long done = atomic_load(&arm_calls_done[ti]);
                long armed = atomic_load(&armings[ti]);
                long begun = atomic_load(&arm_calls_begun[ti]);
                atomic_fetch_add(&sync_slack[ti], (armed - armed_before) + (begun - done));
            }
            break;
        }
        case 14:
            /* start keeps the seq too: a re-arming like reset */
            atomic_fetch_add(&rearms_started[ti], 1);
            atomic_fetch_add(&arm_calls_begun[ti], 1);
            res = pt_timer_start(ts, t, when, 0);
            atomic_fetch_add(&rearms_done[ti], 1);
            CHECK(res == 0 || res == -EBUSY);
            if (res == 0)
                atomic_fetch_add(&armings[ti], 1);
            atomic_fetch_add(&arm_calls_done[ti], 1);
            break;
        case 15:
            if (((r >> 20) & 31) == 0)
                CHECK_EQ(pt_timers_move(&ps[pi].ts, &ps[!pi].ts), 0);
            break;
        }
    }
    return NULL;
}

void test_concurrent_mutators_lose_and_duplicate_nothing(void)
{
    fired = calloc(MAXSEQ, sizeof *fired);
    rearms_at_arm = calloc(MAXSEQ, sizeof *rearms_at_arm);
    CHECK(fired && rearms_at_arm);
    ploop_start(&ps[0], true);
    ploop_start(&ps[1], true);
    for (int i = 0; i < NTIMERS; i++) {
        pt_timer_init(&timers[i], on_fire, &timers[i]);
        /* a seq from the start, so that reset and start before any modify
         * arm a known seq */
        arm_fresh(&ps[i & 1].ts, i, pt_nanotime() + 1000000);
    }

    pthread_t m[NMUTATORS];
    for (uintptr_t i = 0; i < NMUTATORS; i++)
        CHECK_EQ(pthread_create(&m[i], NULL, mutator, (void *)(i + 1)), 0);
    for (int i = 0; i < NMUTATORS; i++)
        CHECK_EQ(pthread_join(m[i], NULL), 0);

    /* Quiet now: every timer is re-armed to fire at once with a fresh seq,
     * and each of those armings must fire exactly once. */
    final_first_seq = atomic_load(&next_seq);
    atomic_store(&final_phase, true);
    for (int i = 0; i < NTIMERS; i++)
        arm_fresh(&ps[i & 1].ts, i, 0);
    pt_nanos give_up = pt_nanotime() + 30 * SECOND;
    while (atomic_load(&final_fired) < NTIMERS) {
        CHECK(pt_nanotime() < give_up); /* a lost timer never fires */
        sched_yield();
    }
    ploop_stop(&ps[0]);
    ploop_stop(&ps[1]);
    for (uintptr_t s = final_first_seq; s < final_first_seq + NTIMERS; s++)
        CHECK_EQ(atomic_load(&fired[s]), 1);
    CHECK_VERIFIED(&ps[0].ts, true);
    CHECK_VERIFIED(&ps[1].ts, true);
    for (int i = 0; i < NTIMERS; i++) {
        /* all one-shots fired: nothing is pending, so nothing to cancel */
        CHECK(pt_timer_status(&timers[i]) == PT_TIMER_NOSTATUS);
        CHECK_EQ(pt_timer_stop_sync(&timers[i]), 0);
        long unaccounted = atomic_load(&armings[i]) - atomic_load(&fires[i]) -
                           atomic_load(&cancels[i]);
        if (unaccounted < 0 || unaccounted > atomic_load(&sync_slack[i]))
            fprintf(stderr, "timer %d: %ld armings, %ld fires, %ld cancels, slack %ld\n", i,
                    atomic_load(&armings[i]), atomic_load(&fires[i]), atomic_load(&cancels[i]),
                    atomic_load(&sync_slack[i]));
        CHECK(unaccounted >= 0 && unaccounted <= atomic_load(&sync_slack[i]));
    }
    CHECK_EQ(pt_timers_len(&ps[0].ts) + pt_timers_len(&ps[1].ts), 0);
    CHECK_EQ(pt_timers_destroy(&ps[0].ts), 0);
    CHECK_EQ(pt_timers_destroy(&ps[1].ts), 0);
    printf("stress: %lu armings, %ld + %ld timers run\n",
           (unsigned long)atomic_load(&next_seq) - 1, atomic_load(&ps[0].ran),
           atomic_load(&ps[1].ran));
    free(fired);
    free(rearms_at_arm);
}
