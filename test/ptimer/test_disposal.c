/* Memory-safe disposal: pt_timer_stop_sync in every state a timer can be
 * in, followed by free(). Run under AddressSanitizer (use after free) and
 * LeakSanitizer (nothing left behind) in CI. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "ploop.h"
#include "util.h"

/* ---- one callback held open on a P thread while another thread disposes */

static atomic_int entered, release_cb, exited;

static void held_callback(void *arg, uintptr_t seq)
{
    (void)arg;
    (void)seq;
    atomic_store(&entered, 1);
    pt_nanos give_up = pt_nanotime() + 30 * SECOND;
    while (!atomic_load(&release_cb))
        CHECK(pt_nanotime() < give_up);
    atomic_store(&exited, 1);
}

static atomic_int disposer_done;
static int disposer_result;

static void *disposer(void *arg)
{
    disposer_result = pt_timer_stop_sync(arg);
    /* The callback must be over by the time stop_sync returns. */
    CHECK_EQ(atomic_load(&exited), 1);
    atomic_store(&disposer_done, 1);
    return NULL;
}

void test_stop_sync_waits_for_callback_running_on_another_thread(void)
{
    struct ploop p;
    ploop_start(&p, false);
    pt_timer *t = malloc(sizeof *t);
    CHECK(t);
    pt_timer_init(t, held_callback, NULL);
    CHECK_EQ(pt_timer_start(&p.ts, t, 1, 0), 0);
    pt_nanos give_up = pt_nanotime() + 30 * SECOND;
    while (!atomic_load(&entered))
        CHECK(pt_nanotime() < give_up);

    pthread_t d;
    CHECK_EQ(pthread_create(&d, NULL, disposer, t), 0);
    /* The disposer must come to wait on the callbacks word (its sleeper
     * bit), not return: the callback has not returned. */
    while (!(atomic_load(&t->callbacks) & PT__CB_WAITER) && !atomic_load(&disposer_done)) {
        CHECK(pt_nanotime() < give_up);
        sched_yield();
    }
    CHECK_EQ(atomic_load(&disposer_done), 0);
    atomic_store(&release_cb, 1);
    CHECK_EQ(pthread_join(d, NULL), 0);
    CHECK_EQ(disposer_result, 0); /* it had already fired: nothing stopped */
    CHECK_EQ(pt_timer_status(t), PT_TIMER_NOSTATUS);
    free(t);
    ploop_stop(&p);
    CHECK_EQ(pt_timers_destroy(&p.ts), 0);
}

/* ---- pt_timer_running: a lazy stop that knows nothing still runs ------ */

/* A ticker held inside its callback is Waiting for its next tick (run
 * re-keys it before the callback), so a lazy stop stops a pending arming
 * while a callback still runs: pt_timer_running says so, and says no once
 * the callback returned, after which a lazy stop is enough. */
void test_running_tells_a_lazy_stop_whether_a_callback_still_runs(void)
{
    atomic_store(&entered, 0);
    atomic_store(&release_cb, 0);
    atomic_store(&exited, 0);
    struct ploop p;
    ploop_start(&p, false);
    pt_timer t;
    pt_timer_init(&t, held_callback, NULL);
    CHECK(!pt_timer_running(&t));
    CHECK(!pt_timer_running(NULL));
    CHECK_EQ(pt_timer_start(&p.ts, &t, 1, 1000 * SECOND), 0);
    pt_nanos give_up = pt_nanotime() + 30 * SECOND;
    while (!atomic_load(&entered))
        CHECK(pt_nanotime() < give_up);
    CHECK(pt_timer_running(&t));
    CHECK_EQ(pt_timer_stop(&t), 1); /* the next tick, pending */
    CHECK(pt_timer_running(&t));    /* ... while this one runs */
    atomic_store(&release_cb, 1);
    while (pt_timer_running(&t))
        CHECK(pt_nanotime() < give_up);
    CHECK_EQ(atomic_load(&exited), 1); /* false comes after the callback's end */
    /* re-armed, stopped before it runs: a lazy stop, and nothing runs */
    CHECK_EQ(pt_timer_reset(&p.ts, &t, pt_nanotime() + 1000 * SECOND), 0);
    CHECK_EQ(pt_timer_stop(&t), 1);
    CHECK(!pt_timer_running(&t));
    CHECK_EQ(pt_timer_stop_sync(&t), 0);
    ploop_stop(&p);
    CHECK_EQ(pt_timers_destroy(&p.ts), 0);
}

/* ---- a ticker that disposes of itself from its own callback ---------- */

static atomic_int self_calls;

static void dispose_self(void *arg, uintptr_t seq)
{
    pt_timer *t = arg;
    (void)seq;
    atomic_fetch_add(&self_calls, 1);
    /* A ticker is Waiting again while its callback runs: stop_sync must
     * stop it, unlink it, and not wait for this very callback. */
    CHECK_EQ(pt_timer_stop_sync(t), 1);
    CHECK_EQ(pt_timer_status(t), PT_TIMER_REMOVED);
    free(t); /* the runner must not touch t after we return */
}

void test_stop_sync_from_own_callback_then_free(void)
{
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    for (int i = 0; i < 100; i++) {
        pt_timer *t = malloc(sizeof *t);
        CHECK(t);
        pt_timer_init(t, dispose_self, t);
        CHECK_EQ(pt_timer_start(&ts, t, 10 + i, 5), 0);
    }
    CHECK_EQ(pt_timers_check(&ts, 1000, true, NULL), 100);
    CHECK_EQ(atomic_load(&self_calls), 100);
    CHECK_EQ(pt_timers_len(&ts), 0);
    CHECK_EQ(pt_timers_check(&ts, 2000, true, NULL), 0);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

/* ---- 100k timers across two live P threads, disposed in every state -- */

#define MASS 100000

struct mass_timer {
    pt_timer t;
    atomic_int active; /* callbacks of this timer running now */
    atomic_int disposed;
    int kind;
};

static atomic_long mass_fired;

static void mass_callback(void *arg, uintptr_t seq)
{
    struct mass_timer *m = arg;
    (void)seq;
    CHECK_EQ(atomic_load(&m->disposed), 0); /* never after stop_sync returned */
    atomic_fetch_add(&m->active, 1);
    if (m->kind == 3) /* a slow callback, so that disposal meets it running */
        for (volatile int i = 0; i < 2000; i++)
            ;
    atomic_fetch_add(&mass_fired, 1);
    atomic_fetch_sub(&m->active, 1);
}

void test_stop_sync_disposes_100k_timers_in_every_state(void)
{
    struct ploop ps[2];
    ploop_start(&ps[0], false);
    ploop_start(&ps[1], false);
    struct mass_timer **ms = calloc(MASS, sizeof *ms);
    CHECK(ms);
    pt_nanos now = pt_nanotime();
    for (int i = 0; i < MASS; i++) {
        struct mass_timer *m = malloc(sizeof *m);
        CHECK(m);
        ms[i] = m;
        atomic_init(&m->active, 0);
        atomic_init(&m->disposed, 0);
        m->kind = i % 6;
        pt_timer_init(&m->t, mass_callback, m);
        pt_timers *ts = &ps[i & 1].ts;
        switch (m->kind) {
        case 0: /* pending far away */
            CHECK_EQ(pt_timer_start(ts, &m->t, now + 3600 * SECOND, 0), 0);
            break;
        case 1: /* stopped: Deleted but still in its heap */
            CHECK_EQ(pt_timer_start(ts, &m->t, now + 3600 * SECOND, 0), 0);
            CHECK_EQ(pt_timer_stop(&m->t), 1);
            break;
        case 2: /* due now: fired or firing by the time it is disposed */
            CHECK_EQ(pt_timer_start(ts, &m->t, now, 0), 0);
            break;
        case 3: /* a ticker with a slow callback: running on a P thread */
            CHECK_EQ(pt_timer_start(ts, &m->t, now, 200000), 0);
            break;
        case 4: /* modified earlier from the other P: ModifiedEarlier */
            CHECK_EQ(pt_timer_start(ts, &m->t, now + 3600 * SECOND, 0), 0);
            CHECK(pt_timer_reset(&ps[!(i & 1)].ts, &m->t, now + 1800 * SECOND) == 1);
            break;
        case 5: /* never started */
            break;
        }
    }
    /* Dispose in an order unrelated to the heaps, while both P threads run. */
    uint64_t x = 0x2545F4914F6CDD1Dull;
    for (int i = MASS - 1; i > 0; i--) {
        int j = (int)(pt__xorshift64(&x) % (uint64_t)(i + 1));
        struct mass_timer *tmp = ms[i];
        ms[i] = ms[j];
        ms[j] = tmp;
    }
    for (int i = 0; i < MASS; i++) {
        struct mass_timer *m = ms[i];
        CHECK(pt_timer_stop_sync(&m->t) >= 0);
        CHECK_EQ(atomic_load(&m->active), 0);
        enum pt_timer_status s = pt_timer_status(&m->t);
        CHECK(s == PT_TIMER_NOSTATUS || s == PT_TIMER_REMOVED);
        atomic_store(&m->disposed, 1);
        free(m);
    }
    ploop_stop(&ps[0]);
    ploop_stop(&ps[1]);
    CHECK_EQ(pt_timers_len(&ps[0].ts), 0);
    CHECK_EQ(pt_timers_len(&ps[1].ts), 0);
    CHECK_VERIFIED(&ps[0].ts, true);
    CHECK_VERIFIED(&ps[1].ts, true);
    CHECK_EQ(pt_timers_destroy(&ps[0].ts), 0);
    CHECK_EQ(pt_timers_destroy(&ps[1].ts), 0);
    free(ms);
    printf("disposal: %ld callbacks ran\n", atomic_load(&mass_fired));
}

/* ---- a one-shot that re-arms itself onto the other P from its callback:
 * the second callback can start right after stop_sync saw none running
 * (the race the spin model found, test/model). Bounded rounds. */

static struct ploop hop_p[2];
static atomic_int hop_active, hop_stop;

static void hop_callback(void *arg, uintptr_t seq)
{
    pt_timer *t = arg;
    atomic_fetch_add(&hop_active, 1);
    if (!atomic_load(&hop_stop))
        pt_timer_reset(&hop_p[!(seq & 1)].ts, t, 0); /* onto the other P, due now */
    for (volatile int i = 0; i < 200; i++)
        ;
    atomic_fetch_sub(&hop_active, 1);
}

void test_stop_sync_outwaits_a_callback_that_rearms_onto_another_p(void)
{
    ploop_start(&hop_p[0], false);
    ploop_start(&hop_p[1], false);
    pt_timer t;
    pt_timer_init(&t, hop_callback, &t);
#ifdef PT__SANITIZED
    enum { ROUNDS = 300 };
#else
    enum { ROUNDS = 3000 };
#endif
    for (int r = 0; r < ROUNDS; r++) {
        atomic_store(&hop_stop, 0);
        CHECK(pt_timer_modify(&hop_p[r & 1].ts, &t, 0, 0, hop_callback, &t, (uintptr_t)r) >= 0);
        for (int spin = 0; spin < r % 50; spin++)
            sched_yield();
        atomic_store(&hop_stop, 1);
        CHECK(pt_timer_stop_sync(&t) >= 0);
        /* the contract: no callback of t runs once stop_sync returned */
        CHECK_EQ(atomic_load(&hop_active), 0);
        enum pt_timer_status s = pt_timer_status(&t);
        CHECK(s == PT_TIMER_NOSTATUS || s == PT_TIMER_REMOVED);
    }
    ploop_stop(&hop_p[0]);
    ploop_stop(&hop_p[1]);
    CHECK_EQ(pt_timers_destroy(&hop_p[0].ts), 0);
    CHECK_EQ(pt_timers_destroy(&hop_p[1].ts), 0);
}
