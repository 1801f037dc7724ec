/* Threads: stop_sync waiting out a callback run elsewhere, and owners
 * checking their heaps while mutators arm, stop and move the same timers,
 * every arming accounted for. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include "base/rng.h"
#include "util.h"

/* ---- stop_sync waits for a callback running on another thread ----------- */

static pt_lheap held_h;
static atomic_int held_in, held_release, held_stopped;

static void held_cb(void *arg, uintptr_t seq)
{
    (void)arg;
    (void)seq;
    atomic_store(&held_in, 1);
    pt_nanos give_up = pt_nanotime() + 30 * SECOND;
    while (!atomic_load(&held_release))
        CHECK(pt_nanotime() < give_up);
}

static void *held_checker(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_lheap_check(&held_h, 100, NULL), 1);
    return NULL;
}

static void *held_stopper(void *arg)
{
    CHECK_EQ(pt_lheap_timer_stop_sync(arg), 0); /* it ran: nothing pending */
    atomic_store(&held_stopped, 1);
    return NULL;
}

void test_stop_sync_waits_for_a_callback_running_on_another_thread(void)
{
    CHECK_EQ(pt_lheap_init(&held_h, NULL, NULL), 0);
    pt_lheap_timer t;
    pt_lheap_timer_init(&t, held_cb, NULL);
    CHECK_EQ(pt_lheap_timer_start(&held_h, &t, 100, 0), 0);
    pthread_t c, s;
    CHECK_EQ(pthread_create(&c, NULL, held_checker, NULL), 0);
    pt_nanos give_up = pt_nanotime() + 30 * SECOND;
    while (!atomic_load(&held_in))
        CHECK(pt_nanotime() < give_up);
    CHECK_LSTATUS(&t, PT_LHEAP_RUNNING);
    CHECK(pt_lheap_timer_running(&t));
    CHECK_EQ(pthread_create(&s, NULL, held_stopper, &t), 0);
    /* the stopper comes to wait on the heap the callback runs from */
    while (!atomic_load(&held_h.sync_waiters) && !atomic_load(&held_stopped))
        CHECK(pt_nanotime() < give_up);
    CHECK_EQ(atomic_load(&held_stopped), 0);
    atomic_store(&held_release, 1);
    CHECK_EQ(pthread_join(c, NULL), 0);
    CHECK_EQ(pthread_join(s, NULL), 0);
    CHECK_LSTATUS(&t, PT_LHEAP_IDLE);
    CHECK(!pt_lheap_timer_running(&t));
    CHECK_LHEAP(&held_h, true);
    CHECK_EQ(pt_lheap_destroy(&held_h), 0);
}

/* ---- owners and mutators racing, nothing lost or duplicated ---------------- */

#define NH 2
#define NT 64

struct acct {
    atomic_long armed;  /* armings made */
    atomic_long ended;  /* firings + pending armings stopped or replaced */
    atomic_int running; /* callbacks of it running now */
};

static pt_lheap heaps[NH];
static pt_lheap_timer timers[NT];
static struct acct acct[NT];
/* stop_sync stops every arming made while it waits and answers 1 for all
 * of them: the other mutator's armings are kept out of its wait (it holds
 * the timer's lock exclusively; the other calls share it). */
static pthread_rwlock_t sync_lock[NT];
static atomic_int stop_owners;
static atomic_long early;

static void acct_cb(void *arg, uintptr_t seq)
{
    struct acct *a = arg;
    if (pt_nanotime() < (pt_nanos)seq) /* seq is the time asked for */
        atomic_fetch_add(&early, 1);
    CHECK_EQ(atomic_fetch_add(&a->running, 1), 0); /* one at a time per timer */
    atomic_fetch_add(&a->ended, 1);
    atomic_fetch_sub(&a->running, 1);
}

static void *owner(void *arg)
{
    pt_lheap *h = arg;
    while (!atomic_load(&stop_owners)) {
        pt_lheap_check(h, 0, NULL);
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
        pt_lheap_timer *t = &timers[k];
        struct acct *a = &acct[k];
        pt_lheap *h = &heaps[pt__xorshift64(&rng) % NH];
        pt_nanos when = pt_nanotime() + (pt_nanos)(pt__xorshift64(&rng) % (2 * MS));
        unsigned op = (unsigned)(pt__xorshift64(&rng) % 4);
        CHECK_EQ(op == 2 ? pthread_rwlock_wrlock(&sync_lock[k])
                         : pthread_rwlock_rdlock(&sync_lock[k]),
                 0);
        switch (op) {
        case 0: { /* arm: counts; a pending arming it replaced ends */
            int r = pt_lheap_timer_modify(h, t, when, 0, acct_cb, a, (uintptr_t)when);
            CHECK(r == 0 || r == 1);
            atomic_fetch_add(&a->armed, 1);
            atomic_fetch_add(&a->ended, r);
            break;
        }
        case 1: {
            int r = pt_lheap_timer_stop(t);
            CHECK(r == 0 || r == 1);
            atomic_fetch_add(&a->ended, r);
            break;
        }
        case 2: {
            int r = pt_lheap_timer_stop_sync(t);
            CHECK(r == 0 || r == 1);
            atomic_fetch_add(&a->ended, r);
            CHECK_EQ(atomic_load(&a->running), 0); /* none runs once it returned */
            break;
        }
        default:
            /* a P going away, from outside, while both heaps run */
            if (pt__xorshift64(&rng) % 64 == 0)
                CHECK_EQ(pt_lheap_move(&heaps[0], &heaps[1]), 0);
            break;
        }
        CHECK_EQ(pthread_rwlock_unlock(&sync_lock[k]), 0);
    }
    return NULL;
}

void test_owners_and_mutators_race_and_every_arming_ends_exactly_once(void)
{
    for (int i = 0; i < NH; i++)
        CHECK_EQ(pt_lheap_init(&heaps[i], NULL, NULL), 0);
    for (int k = 0; k < NT; k++) {
        pt_lheap_timer_init(&timers[k], acct_cb, &acct[k]);
        CHECK_EQ(pthread_rwlock_init(&sync_lock[k], NULL), 0);
    }
    pthread_t o[NH], m[2];
    for (int i = 0; i < NH; i++)
        CHECK_EQ(pthread_create(&o[i], NULL, owner, &heaps[i]), 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&m[i], NULL, mutator, (void *)(uintptr_t)(i + 1)), 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_join(m[i], NULL), 0);
    /* Every timer is due within 2 ms of the last arm; the owners run until
     * every entry, zombies included, has gone (a quarter clears those). */
    pt_nanos give_up = pt_nanotime() + 30 * SECOND;
    while (pt_lheap_len(&heaps[0]) + pt_lheap_len(&heaps[1]) > 0)
        CHECK(pt_nanotime() < give_up);
    atomic_store(&stop_owners, 1);
    for (int i = 0; i < NH; i++)
        CHECK_EQ(pthread_join(o[i], NULL), 0);
    long armed = 0;
    for (int k = 0; k < NT; k++) {
        CHECK_EQ(pt_lheap_timer_stop_sync(&timers[k]), 0);
        CHECK_EQ(atomic_load(&acct[k].armed), atomic_load(&acct[k].ended));
        armed += atomic_load(&acct[k].armed);
        CHECK_EQ(pthread_rwlock_destroy(&sync_lock[k]), 0);
    }
    CHECK(armed > 1000);
    CHECK_EQ(atomic_load(&early), 0);
    for (int i = 0; i < NH; i++) {
        CHECK_LHEAP(&heaps[i], true);
        CHECK_EQ(pt_lheap_destroy(&heaps[i]), 0);
    }
}
