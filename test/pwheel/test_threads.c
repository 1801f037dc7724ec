/* The wheel across threads: stop_sync against a callback running on
 * another thread, and mutators racing owners that run their wheels, with
 * exact accounting. Bounded loops; run under ThreadSanitizer and
 * AddressSanitizer in CI. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "util.h"

/* ---- stop_sync waits out a callback running on another thread ---------- */

static atomic_int entered, disposer_in, exited;

static void held_cb(void *arg, uintptr_t seq)
{
    (void)arg;
    (void)seq;
    atomic_store(&entered, 1);
    pt_nanos give_up = pt_nanotime() + 30 * SECOND;
    while (!atomic_load(&disposer_in))
        CHECK(pt_nanotime() < give_up);
    /* The disposer is in stop_sync (or about to be): if stop_sync did not
     * wait, it would see exited == 0. A few hundred yields give it every
     * chance to come back early. */
    for (int i = 0; i < 300; i++)
        sched_yield();
    atomic_store(&exited, 1);
}

static void *checker(void *arg)
{
    pt_wheel *w = arg;
    CHECK_EQ(pt_wheel_check(w, 1 * MS, NULL), 1);
    return NULL;
}

void test_stop_sync_waits_for_a_callback_running_on_another_thread(void)
{
    pt_wheel w;
    CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
    for (pt_nanos period = 0; period <= 1; period++) {
        atomic_store(&entered, 0);
        atomic_store(&disposer_in, 0);
        atomic_store(&exited, 0);
        pt_wheel_timer *t = malloc(sizeof *t);
        CHECK(t);
        pt_wheel_timer_init(t, held_cb, NULL);
        CHECK_EQ(pt_wheel_timer_start(&w, t, 1 * MS, period * SECOND), 0);
        pthread_t c;
        CHECK_EQ(pthread_create(&c, NULL, checker, &w), 0);
        pt_nanos give_up = pt_nanotime() + 30 * SECOND;
        while (!atomic_load(&entered))
            CHECK(pt_nanotime() < give_up);
        atomic_store(&disposer_in, 1);
        /* a one-shot is Running (0); a ticker was pending again (1) */
        CHECK_EQ(pt_wheel_timer_stop_sync(t), (int)period);
        CHECK_EQ(atomic_load(&exited), 1);
        CHECK_WSTATUS(t, PT_WHEEL_IDLE);
        free(t); /* ASan: the checker must not touch it any more */
        CHECK_EQ(pthread_join(c, NULL), 0);
        CHECK_WHEEL(&w);
    }
    CHECK_EQ(pt_wheel_destroy(&w), 0);
}

/* ---- owners and mutators racing, nothing lost or duplicated ------------ */

#define NW 2
#define NT 64

struct acct {
    atomic_long armed;  /* armings made */
    atomic_long ended;  /* firings + pending armings stopped or replaced */
    atomic_int running; /* callbacks of it running now */
};

static pt_wheel wheels[NW];
static pt_wheel_timer timers[NT];
static struct acct acct[NT];
/* stop_sync stops every arming made while it waits for a callback (it
 * must: on return the timer may be freed) and answers 1 for all of them,
 * so two armings by the other mutator during one stop_sync would end with
 * one count. A stop_sync holds its timer's lock exclusively, the other
 * calls share it: they still race each other and every callback. */
static pthread_rwlock_t sync_lock[NT];
static atomic_int stop_owners;
static atomic_long early;

static void acct_cb(void *arg, uintptr_t seq)
{
    struct acct *a = arg;
    /* never early: seq is the time asked for */
    if (pt_nanotime() < (pt_nanos)seq)
        atomic_fetch_add(&early, 1);
    CHECK_EQ(atomic_fetch_add(&a->running, 1), 0); /* one at a time per timer */
    atomic_fetch_add(&a->ended, 1);
    atomic_fetch_sub(&a->running, 1);
}

static void *owner(void *arg)
{
    pt_wheel *w = arg;
    while (!atomic_load(&stop_owners)) {
        pt_wheel_check(w, 0, NULL);
        sched_yield();
    }
    return NULL;
}

static void *mutator(void *arg)
{
    uint64_t rng = (uint64_t)(uintptr_t)arg * 7919 + 1;
#ifdef PT__SANITIZED
    int ops = 20000;
#else
    int ops = 200000;
#endif
    for (int i = 0; i < ops; i++) {
        int k = (int)(pt__xorshift64(&rng) % NT);
        pt_wheel_timer *t = &timers[k];
        struct acct *a = &acct[k];
        pt_wheel *w = &wheels[pt__xorshift64(&rng) % NW];
        pt_nanos when = pt_nanotime() + (pt_nanos)(pt__xorshift64(&rng) % (2 * MS));
        unsigned op = (unsigned)(pt__xorshift64(&rng) % 4);
        if (op == 2)
            CHECK_EQ(pthread_rwlock_wrlock(&sync_lock[k]), 0);
        else
            CHECK_EQ(pthread_rwlock_rdlock(&sync_lock[k]), 0);
        switch (op) {
        case 0: { /* start: counts only if it armed */
            int r = pt_wheel_timer_modify(w, t, when, 0, acct_cb, a, (uintptr_t)when);
            CHECK(r == 0 || r == 1);
            atomic_fetch_add(&a->armed, 1);
            if (r == 1)
                atomic_fetch_add(&a->ended, 1); /* the pending arming it replaced */
            break;
        }
        case 1: {
            int r = pt_wheel_timer_stop(t);
            CHECK(r == 0 || r == 1);
            atomic_fetch_add(&a->ended, r);
            break;
        }
        case 2: {
            int r = pt_wheel_timer_stop_sync(t);
            CHECK(r == 0 || r == 1);
            atomic_fetch_add(&a->ended, r);
            CHECK_EQ(atomic_load(&a->running), 0); /* none runs once it returned... */
            break;
        }
        default:
            /* an owner's move to the other wheel, from outside: refused
             * (-EBUSY) while the source runs a callback */
            if (pt__xorshift64(&rng) % 64 == 0) {
                int r = pt_wheel_move(&wheels[0], &wheels[1]);
                CHECK(r == 0 || r == -EBUSY);
            }
            break;
        }
        CHECK_EQ(pthread_rwlock_unlock(&sync_lock[k]), 0);
    }
    return NULL;
}

void test_owners_and_mutators_race_and_every_arming_ends_exactly_once(void)
{
    for (int i = 0; i < NW; i++)
        CHECK_EQ(pt_wheel_init(&wheels[i], 0, NULL, NULL), 0);
    for (int k = 0; k < NT; k++) {
        pt_wheel_timer_init(&timers[k], acct_cb, &acct[k]);
        CHECK_EQ(pthread_rwlock_init(&sync_lock[k], NULL), 0);
        atomic_store(&acct[k].armed, 0);
        atomic_store(&acct[k].ended, 0);
        atomic_store(&acct[k].running, 0);
    }
    atomic_store(&stop_owners, 0);
    atomic_store(&early, 0);
    pthread_t o[NW], m[2];
    for (int i = 0; i < NW; i++)
        CHECK_EQ(pthread_create(&o[i], NULL, owner, &wheels[i]), 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&m[i], NULL, mutator, (void *)(uintptr_t)(i + 1)), 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_join(m[i], NULL), 0);
    /* Let everything still pending fire: every timer is due within 2 ms
     * of the last arm, and the owners run until all have. */
    pt_nanos give_up = pt_nanotime() + 30 * SECOND;
    while (pt_wheel_len(&wheels[0]) + pt_wheel_len(&wheels[1]) > 0)
        CHECK(pt_nanotime() < give_up);
    atomic_store(&stop_owners, 1);
    for (int i = 0; i < NW; i++)
        CHECK_EQ(pthread_join(o[i], NULL), 0);
    long armed = 0;
    for (int k = 0; k < NT; k++) {
        CHECK_EQ(pt_wheel_timer_stop_sync(&timers[k]), 0);
        CHECK_EQ(atomic_load(&acct[k].armed), atomic_load(&acct[k].ended));
        armed += atomic_load(&acct[k].armed);
    }
    CHECK(armed > 1000);
    CHECK_EQ(atomic_load(&early), 0);
    for (int k = 0; k < NT; k++)
        CHECK_EQ(pthread_rwlock_destroy(&sync_lock[k]), 0);
    for (int i = 0; i < NW; i++) {
        CHECK_WHEEL(&wheels[i]);
        CHECK_EQ(pt_wheel_destroy(&wheels[i]), 0);
    }
}

/* ---- a second checker leaves what it collected to the running one ------- */

static pt_wheel hand_w;
static atomic_int hand_entered, hand_release, hand_second_ran;

static void hand_first_cb(void *arg, uintptr_t seq)
{
    (void)arg;
    (void)seq;
    atomic_store(&hand_entered, 1);
    pt_nanos give_up = pt_nanotime() + 30 * SECOND;
    while (!atomic_load(&hand_release))
        CHECK(pt_nanotime() < give_up);
}

static void hand_second_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    /* run by the thread that was already running callbacks */
    CHECK(pthread_equal(pthread_self(), *(pthread_t *)arg));
    atomic_store(&hand_second_ran, 1);
}

static void *hand_runner(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_wheel_check(&hand_w, 1 * MS, NULL), 2); /* its own and the one handed over */
    return NULL;
}

void test_check_meeting_running_callbacks_leaves_its_timers_to_that_thread(void)
{
    CHECK_EQ(pt_wheel_init(&hand_w, 0, NULL, NULL), 0);
    atomic_store(&hand_entered, 0);
    atomic_store(&hand_release, 0);
    atomic_store(&hand_second_ran, 0);
    pthread_t runner;
    pt_wheel_timer first, second;
    pt_wheel_timer_init(&first, hand_first_cb, NULL);
    pt_wheel_timer_init(&second, hand_second_cb, &runner);
    CHECK_EQ(pt_wheel_timer_start(&hand_w, &first, 1 * MS, 0), 0);
    CHECK_EQ(pthread_create(&runner, NULL, hand_runner, NULL), 0);
    pt_nanos give_up = pt_nanotime() + 30 * SECOND;
    while (!atomic_load(&hand_entered))
        CHECK(pt_nanotime() < give_up);
    /* first's callback holds the wheel's callbacks: this check collects
     * second but must not run it beside first */
    CHECK_EQ(pt_wheel_timer_start(&hand_w, &second, 2 * MS, 0), 0);
    CHECK_EQ(pt_wheel_check(&hand_w, 2 * MS, NULL), 0);
    CHECK_EQ(atomic_load(&hand_second_ran), 0);
    CHECK_WSTATUS(&second, PT_WHEEL_PENDING);
    CHECK_EQ(pt_wheel_timer_stop(&second), 1); /* still stoppable, then armed again */
    CHECK_EQ(pt_wheel_timer_start(&hand_w, &second, 2 * MS, 0), 0);
    CHECK_EQ(pt_wheel_check(&hand_w, 2 * MS, NULL), 0);
    atomic_store(&hand_release, 1);
    CHECK_EQ(pthread_join(runner, NULL), 0);
    CHECK_EQ(atomic_load(&hand_second_ran), 1);
    CHECK_WHEEL(&hand_w);
    CHECK_EQ(pt_wheel_destroy(&hand_w), 0);
}

/* ---- two threads claiming one idle timer for two wheels ------------------ */

static pt_wheel claim_w[2];
static pt_wheel_timer claim_t;
static atomic_int claim_go;
static int claim_ret[2];

static void *claimer(void *arg)
{
    int i = (int)(uintptr_t)arg;
    while (!atomic_load(&claim_go))
        ;
    claim_ret[i] = pt_wheel_timer_start(&claim_w[i], &claim_t, 10 * SECOND, 0);
    return NULL;
}

void test_two_starts_of_one_idle_timer_on_two_wheels_one_wins(void)
{
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pt_wheel_init(&claim_w[i], 0, NULL, NULL), 0);
    int n = 0;
    pt_wheel_timer_init(&claim_t, wcount_cb, &n);
#ifdef PT__SANITIZED
    int rounds = 300;
#else
    int rounds = 3000;
#endif
    for (int r = 0; r < rounds; r++) {
        atomic_store(&claim_go, 0);
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
            CHECK_EQ(pthread_create(&th[i], NULL, claimer, (void *)(uintptr_t)i), 0);
        atomic_store(&claim_go, 1);
        for (int i = 0; i < 2; i++)
            CHECK_EQ(pthread_join(th[i], NULL), 0);
        /* exactly one armed it; the other found it pending */
        CHECK((claim_ret[0] == 0 && claim_ret[1] == -EBUSY) ||
              (claim_ret[0] == -EBUSY && claim_ret[1] == 0));
        int on = claim_ret[0] == 0 ? 0 : 1;
        CHECK_EQ(pt_wheel_len(&claim_w[on]), 1);
        CHECK_EQ(pt_wheel_len(&claim_w[1 - on]), 0);
        CHECK(atomic_load(&claim_t.wheel) == &claim_w[on]);
        CHECK_EQ(pt_wheel_timer_stop(&claim_t), 1);
    }
    for (int i = 0; i < 2; i++) {
        CHECK_WHEEL(&claim_w[i]);
        CHECK_EQ(pt_wheel_destroy(&claim_w[i]), 0);
    }
}
