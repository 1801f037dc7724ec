#include "ploop.h"

#include "base/futex.h"
#include "harness.h"

static void ploop_wake(void *ctx, pt_nanos when)
{
    struct ploop *p = ctx;
    (void)when;
    atomic_fetch_add(&p->wakes, 1);
    atomic_fetch_add(&p->wakeword, 1);
    pt__futex_wake(&p->wakeword, 1);
}

static void *ploop_main(void *arg)
{
    struct ploop *p = arg;
    unsigned iter = 0;
    while (!atomic_load(&p->stop)) {
        uint32_t w = atomic_load(&p->wakeword);
        pt_nanos next;
        int n = pt_timers_check(&p->ts, 0, true, &next);
        CHECK(n >= 0);
        atomic_fetch_add(&p->ran, n);
        if (p->verify && ++iter % 64 == 0)
            CHECK_VERIFIED(&p->ts, false);
        /* Sleep until the next timer, at most 200 us so that stop is seen. */
        pt_nanos now = pt_nanotime(), until = now + 200000;
        if (next != 0 && next < until)
            until = next;
        if (until > now)
            pt__futex_wait(&p->wakeword, w, until);
    }
    return NULL;
}

void ploop_start(struct ploop *p, bool verify)
{
    pt_timers_init(&p->ts, ploop_wake, p);
    atomic_init(&p->wakeword, 0);
    atomic_init(&p->stop, false);
    atomic_init(&p->ran, 0);
    atomic_init(&p->wakes, 0);
    p->verify = verify;
    CHECK_EQ(pthread_create(&p->thread, NULL, ploop_main, p), 0);
}

void ploop_stop(struct ploop *p)
{
    atomic_store(&p->stop, true);
    atomic_fetch_add(&p->wakeword, 1);
    pt__futex_wake(&p->wakeword, 1);
    CHECK_EQ(pthread_join(p->thread, NULL), 0);
}
