/* The heap's rules, one thread, time driven by hand: when a timer fires,
 * what a stop, a modify, a revival, a move and stop_sync do to its entry,
 * and a random run against a model of what the API promises. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "util.h"

static pt_lheap h;

static void fresh(void)
{
    CHECK_EQ(pt_lheap_init(&h, NULL, NULL), 0);
}

static void done(void)
{
    CHECK_LHEAP(&h, true);
    CHECK_EQ(pt_lheap_destroy(&h), 0);
}

void test_timer_fires_once_at_its_time_and_not_one_ns_before(void)
{
    fresh();
    int n = 0;
    pt_lheap_timer t;
    pt_lheap_timer_init(&t, lcount_cb, &n);
    CHECK_EQ(pt_lheap_timer_start(&h, &t, 1000, 0), 0);
    CHECK_LSTATUS(&t, PT_LHEAP_PENDING);
    CHECK_EQ(pt_lheap_next(&h), 1000);
    pt_nanos poll = -1;
    CHECK_EQ(pt_lheap_check(&h, 999, &poll), 0);
    CHECK_EQ(n, 0);
    CHECK_EQ(poll, 1000);
    CHECK_EQ(pt_lheap_check(&h, 1000, &poll), 1);
    CHECK_EQ(n, 1);
    CHECK_EQ(poll, 0);
    CHECK_LSTATUS(&t, PT_LHEAP_IDLE);
    CHECK_EQ(pt_lheap_len(&h), 0);
    CHECK_EQ(pt_lheap_check(&h, 5000, NULL), 0);
    CHECK_EQ(n, 1);
    done();
}

void test_stop_leaves_a_zombie_that_the_top_or_a_quarter_clears(void)
{
    fresh();
    int na = 0, nb = 0, nc = 0;
    pt_lheap_timer a, b, c;
    pt_lheap_timer_init(&a, lcount_cb, &na);
    pt_lheap_timer_init(&b, lcount_cb, &nb);
    pt_lheap_timer_init(&c, lcount_cb, &nc);
    CHECK_EQ(pt_lheap_timer_start(&h, &a, 100, 0), 0);
    CHECK_EQ(pt_lheap_timer_start(&h, &b, 200, 0), 0);
    CHECK_EQ(pt_lheap_timer_start(&h, &c, 300, 0), 0);
    CHECK_EQ(pt_lheap_timer_stop(&b), 1);
    CHECK_EQ(pt_lheap_timer_stop(&b), 0);
    CHECK_LSTATUS(&b, PT_LHEAP_IDLE);
    CHECK_EQ(pt_lheap_zombies(&h), 1);
    CHECK_EQ(pt_lheap_len(&h), 3); /* the zombie keeps its entry */
    CHECK(pt_lheap_timer_in_heap(&b));
    CHECK_LHEAP(&h, true);
    /* a runs; b, now the top, is dropped; c is not due */
    CHECK_EQ(pt_lheap_check(&h, 250, NULL), 1);
    CHECK_EQ(na, 1);
    CHECK_EQ(nb, 0);
    CHECK(!pt_lheap_timer_in_heap(&b));
    CHECK_EQ(pt_lheap_len(&h), 1);
    CHECK_EQ(pt_lheap_zombies(&h), 0);
    CHECK_EQ(pt_lheap_timer_stop(&c), 1);
    CHECK_EQ(pt_lheap_check(&h, 1000, NULL), 0);
    CHECK_EQ(nc, 0);
    CHECK_EQ(pt_lheap_len(&h), 0);

    /* A quarter: 100 timers, 25 stopped stay (not over a quarter), 30 go
     * at the next check although nothing is due (Go's adjust, forced). */
    enum { N = 100 };
    pt_lheap_timer *ts = calloc(N, sizeof *ts);
    int fired = 0;
    for (int i = 0; i < N; i++) {
        pt_lheap_timer_init(&ts[i], lcount_cb, &fired);
        CHECK_EQ(pt_lheap_timer_start(&h, &ts[i], 10000 + i, 0), 0);
    }
    for (int i = N - 25; i < N; i++)
        CHECK_EQ(pt_lheap_timer_stop(&ts[i]), 1);
    CHECK_EQ(pt_lheap_check(&h, 1, NULL), 0);
    CHECK_EQ(pt_lheap_len(&h), N);
    for (int i = N - 30; i < N - 25; i++)
        CHECK_EQ(pt_lheap_timer_stop(&ts[i]), 1);
    CHECK_EQ(pt_lheap_check(&h, 1, NULL), 0);
    CHECK_EQ(pt_lheap_len(&h), N - 30);
    CHECK_EQ(pt_lheap_zombies(&h), 0);
    CHECK_LHEAP(&h, true);
    CHECK_EQ(pt_lheap_check(&h, 20000, NULL), N - 30);
    CHECK_EQ(fired, N - 30);
    free(ts);
    done();
}

void test_modify_later_keeps_the_entry_until_the_top_rekeys_it(void)
{
    fresh();
    int n = 0;
    pt_lheap_timer t;
    pt_lheap_timer_init(&t, lcount_cb, &n);
    CHECK_EQ(pt_lheap_timer_start(&h, &t, 100, 0), 0);
    CHECK_EQ(pt_lheap_timer_reset(&h, &t, 500), 1);
    CHECK_EQ(pt_lheap_len(&h), 1);
    CHECK_EQ(pt_lheap_next(&h), 100); /* later: the heap learns at its top */
    CHECK_LHEAP(&h, true);
    pt_nanos poll = 0;
    CHECK_EQ(pt_lheap_check(&h, 100, &poll), 0);
    CHECK_EQ(n, 0);
    CHECK_EQ(poll, 500);
    CHECK_EQ(pt_lheap_check(&h, 499, NULL), 0);
    CHECK_EQ(pt_lheap_check(&h, 500, NULL), 1);
    CHECK_EQ(n, 1);
    done();
}

void test_modify_earlier_lowers_next_and_adjust_runs_it_on_time(void)
{
    fresh();
    int na = 0, nt = 0;
    pt_lheap_timer a, t;
    pt_lheap_timer_init(&a, lcount_cb, &na);
    pt_lheap_timer_init(&t, lcount_cb, &nt);
    CHECK_EQ(pt_lheap_timer_start(&h, &a, 1000, 0), 0);
    CHECK_EQ(pt_lheap_timer_start(&h, &t, 2000, 0), 0);
    CHECK_EQ(pt_lheap_timer_modify(&h, &t, 500, 0, lcount_cb, &nt, 7), 1);
    CHECK_EQ(pt_lheap_next(&h), 500);
    pt_nanos poll = 0;
    CHECK_EQ(pt_lheap_check(&h, 499, &poll), 0);
    CHECK_EQ(poll, 500);
    CHECK_EQ(pt_lheap_check(&h, 500, &poll), 1);
    CHECK_EQ(nt, 1);
    CHECK_EQ(na, 0);
    CHECK_EQ(poll, 1000);
    CHECK_LHEAP(&h, true);
    CHECK_EQ(pt_lheap_check(&h, 1000, NULL), 1);
    CHECK_EQ(na, 1);
    done();
}

void test_arming_a_zombie_revives_it_in_place(void)
{
    fresh();
    int n = 0;
    pt_lheap_timer t;
    pt_lheap_timer_init(&t, lcount_cb, &n);
    CHECK_EQ(pt_lheap_timer_start(&h, &t, 100, 0), 0);
    CHECK_EQ(pt_lheap_timer_stop(&t), 1);
    CHECK_EQ(pt_lheap_zombies(&h), 1);
    CHECK_EQ(pt_lheap_timer_reset(&h, &t, 300), 0); /* it was not pending */
    CHECK_EQ(pt_lheap_zombies(&h), 0);
    CHECK_EQ(pt_lheap_len(&h), 1); /* the same entry, not a second one */
    CHECK_LSTATUS(&t, PT_LHEAP_PENDING);
    CHECK_EQ(pt_lheap_check(&h, 100, NULL), 0);
    CHECK_EQ(pt_lheap_check(&h, 300, NULL), 1);
    CHECK_EQ(n, 1);
    done();
}

void test_ticker_skips_missed_ticks_and_keeps_its_phase(void)
{
    fresh();
    int n = 0;
    pt_lheap_timer t;
    pt_lheap_timer_init(&t, lcount_cb, &n);
    CHECK_EQ(pt_lheap_timer_start(&h, &t, 100, 10), 0);
    pt_nanos poll = 0;
    CHECK_EQ(pt_lheap_check(&h, 100, &poll), 1);
    CHECK_EQ(poll, 110);
    /* late: 110, 120 and 130 missed, one run, the phase kept */
    CHECK_EQ(pt_lheap_check(&h, 135, &poll), 1);
    CHECK_EQ(poll, 140);
    CHECK_EQ(n, 2);
    CHECK_LSTATUS(&t, PT_LHEAP_PENDING);
    CHECK_EQ(pt_lheap_check(&h, 140, &poll), 1);
    CHECK_EQ(pt_lheap_timer_stop(&t), 1);
    CHECK_EQ(pt_lheap_check(&h, 1000, NULL), 0);
    CHECK_EQ(n, 3);
    done();
}

static void lfiring_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    firings_record(arg, pt_lheap_firing);
}

void test_firing_names_the_tick_due_and_the_checks_now(void)
{
    pt_nanos when = 7, now = 7;
    CHECK_EQ(pt_lheap_firing(&when, &now), -ENOENT);
    CHECK_EQ(when, 7);
    CHECK_EQ(pt_lheap_firing(&when, NULL), -EINVAL);
    fresh();
    struct firings f = {0};
    pt_lheap_timer t;
    pt_lheap_timer_init(&t, lfiring_cb, &f);
    CHECK_EQ(pt_lheap_timer_start(&h, &t, 100, 10), 0);
    CHECK_EQ(pt_lheap_check(&h, 100, NULL), 1);
    CHECK_EQ(pt_lheap_check(&h, 113, NULL), 1); /* 3 late */
    CHECK_EQ(pt_lheap_check(&h, 145, NULL), 1); /* 120..140 owed: one run */
    CHECK_EQ(pt_lheap_check(&h, 150, NULL), 1);
    const pt_nanos when_want[] = {100, 110, 120, 150}, now_want[] = {100, 113, 145, 150};
    firings_check(&f, when_want, now_want, 4);
    CHECK_EQ(pt_lheap_firing(&when, &now), -ENOENT);
    CHECK_EQ(pt_lheap_timer_stop_sync(&t), 1);
    done();
}

void test_start_of_pending_timer_is_ebusy_and_never_timer_never_fires(void)
{
    fresh();
    int n = 0;
    pt_lheap_timer t, never;
    pt_lheap_timer_init(&t, lcount_cb, &n);
    pt_lheap_timer_init(&never, lcount_cb, &n);
    CHECK_EQ(pt_lheap_timer_start(&h, &t, 100, 0), 0);
    CHECK_EQ(pt_lheap_timer_start(&h, &t, 50, 0), -EBUSY);
    CHECK_EQ(pt_lheap_next(&h), 100);
    CHECK_EQ(pt_lheap_timer_start(&h, &never, -1, 0), 0);
    CHECK_LSTATUS(&never, PT_LHEAP_PENDING);
    CHECK_EQ(pt_lheap_check(&h, PT_MAXWHEN - 1, NULL), 1);
    CHECK_EQ(n, 1);
    CHECK_LSTATUS(&never, PT_LHEAP_PENDING);
    /* a when of 0 is due at once */
    CHECK_EQ(pt_lheap_timer_start(&h, &t, 0, 0), 0);
    CHECK_EQ(pt_lheap_check(&h, 1, NULL), 1);
    CHECK_EQ(n, 2);
    CHECK_EQ(pt_lheap_timer_stop_sync(&never), 1);
    done();
}

struct wakes {
    int n;
    pt_nanos last;
};

static void count_wake(void *ctx, pt_nanos when)
{
    struct wakes *w = ctx;
    w->n++;
    w->last = when;
}

void test_wake_runs_for_a_new_top_or_a_timer_modified_earlier(void)
{
    struct wakes w = {0, 0};
    CHECK_EQ(pt_lheap_init(&h, count_wake, &w), 0);
    int n = 0;
    pt_lheap_timer a, b;
    pt_lheap_timer_init(&a, lcount_cb, &n);
    pt_lheap_timer_init(&b, lcount_cb, &n);
    CHECK_EQ(pt_lheap_timer_start(&h, &a, 1000, 0), 0);
    CHECK_EQ(w.n, 1);
    CHECK_EQ(w.last, 1000);
    CHECK_EQ(pt_lheap_timer_start(&h, &b, 2000, 0), 0);
    CHECK_EQ(w.n, 1); /* not the top */
    CHECK_EQ(pt_lheap_timer_reset(&h, &b, 3000), 1);
    CHECK_EQ(w.n, 1); /* later */
    CHECK_EQ(pt_lheap_timer_reset(&h, &b, 500), 1);
    CHECK_EQ(w.n, 2);
    CHECK_EQ(w.last, 500);
    CHECK_EQ(pt_lheap_check(&h, 3000, NULL), 2);
    done();
}

void test_move_drops_zombies_applies_modifications_and_wakes_dst(void)
{
    pt_lheap src, dst;
    struct wakes w = {0, 0};
    CHECK_EQ(pt_lheap_init(&src, NULL, NULL), 0);
    CHECK_EQ(pt_lheap_init(&dst, count_wake, &w), 0);
    int n = 0;
    pt_lheap_timer a, b, c;
    pt_lheap_timer_init(&a, lcount_cb, &n);
    pt_lheap_timer_init(&b, lcount_cb, &n);
    pt_lheap_timer_init(&c, lcount_cb, &n);
    CHECK_EQ(pt_lheap_timer_start(&src, &a, 100, 0), 0);
    CHECK_EQ(pt_lheap_timer_start(&src, &b, 200, 0), 0);
    CHECK_EQ(pt_lheap_timer_start(&src, &c, 300, 0), 0);
    CHECK_EQ(pt_lheap_timer_stop(&b), 1);
    CHECK_EQ(pt_lheap_timer_reset(&src, &c, 400), 1);
    CHECK_EQ(pt_lheap_move(&dst, &src), 0);
    CHECK_EQ(pt_lheap_len(&src), 0);
    CHECK_EQ(pt_lheap_next(&src), 0);
    CHECK_EQ(pt_lheap_len(&dst), 2); /* the zombie did not come */
    CHECK_EQ(pt_lheap_zombies(&src), 0);
    CHECK_EQ(w.n, 1);
    CHECK_EQ(w.last, 100);
    CHECK_LHEAP(&dst, true);
    CHECK_EQ(pt_lheap_check(&src, 1000, NULL), 0);
    CHECK_EQ(pt_lheap_check(&dst, 399, NULL), 1);
    CHECK_EQ(pt_lheap_check(&dst, 400, NULL), 1);
    CHECK_EQ(n, 2);
    CHECK_EQ(pt_lheap_move(&dst, &dst), -EINVAL);
    CHECK_EQ(pt_lheap_destroy(&src), 0);
    CHECK_EQ(pt_lheap_destroy(&dst), 0);
}

/* A callback that stops its own timer with stop_sync and frees it. */
static void free_self(void *arg, uintptr_t seq)
{
    (void)seq;
    pt_lheap_timer *t = arg;
    CHECK_EQ(pt_lheap_timer_stop_sync(t), t->period > 0 ? 1 : 0);
    memset(t, 0x5a, sizeof *t);
    free(t);
}

void test_stop_sync_takes_the_entry_out_at_once_and_from_own_callback(void)
{
    fresh();
    int n = 0;
    pt_lheap_timer ts[4];
    for (int i = 0; i < 4; i++) {
        pt_lheap_timer_init(&ts[i], lcount_cb, &n);
        CHECK_EQ(pt_lheap_timer_start(&h, &ts[i], 100 + i, 0), 0);
    }
    CHECK_EQ(pt_lheap_timer_stop_sync(&ts[2]), 1);
    CHECK_EQ(pt_lheap_len(&h), 3); /* out at once, not a zombie */
    CHECK_EQ(pt_lheap_zombies(&h), 0);
    CHECK_LHEAP(&h, true);
    CHECK_EQ(pt_lheap_timer_stop(&ts[1]), 1);
    CHECK_EQ(pt_lheap_timer_stop_sync(&ts[1]), 0); /* a zombie: taken out too */
    CHECK_EQ(pt_lheap_len(&h), 2);
    CHECK_EQ(pt_lheap_check(&h, 1000, NULL), 2);
    CHECK_EQ(n, 2);
    /* from its own callback, a one-shot and a ticker, each then freed
     * (AddressSanitizer sees the check touch either afterwards) */
    for (int period = 0; period <= 10; period += 10) {
        pt_lheap_timer *t = malloc(sizeof *t);
        pt_lheap_timer_init(t, free_self, t);
        CHECK_EQ(pt_lheap_timer_start(&h, t, 2000, period), 0);
        CHECK_EQ(pt_lheap_check(&h, 2000, NULL), 1);
        CHECK_EQ(pt_lheap_len(&h), 0);
    }
    done();
}

static int bad_calls;

static void never_cb(void *arg, uintptr_t seq)
{
    (void)arg;
    (void)seq;
    bad_calls++;
}

void test_every_call_rejects_bad_input_and_changes_nothing(void)
{
    pt_lheap none;
    memset(&none, 0, sizeof none);
    pt_lheap_timer t, zero;
    memset(&zero, 0, sizeof zero);
    CHECK_EQ(pt_lheap_init(NULL, NULL, NULL), -EINVAL);
    CHECK_EQ(pt_lheap_destroy(NULL), -EINVAL);
    CHECK_EQ(pt_lheap_destroy(&none), -EINVAL);
    CHECK_EQ(pt_lheap_check(NULL, 1, NULL), -EINVAL);
    CHECK_EQ(pt_lheap_check(&none, 1, NULL), -EINVAL);
    CHECK_EQ(pt_lheap_next(&none), 0);
    CHECK_EQ(pt_lheap_len(NULL), 0);
    fresh();
    pt_lheap_timer_init(NULL, never_cb, NULL); /* nothing to do, no crash */
    pt_lheap_timer_init(&t, never_cb, NULL);
    CHECK_EQ(pt_lheap_timer_start(NULL, &t, 1, 0), -EINVAL);
    CHECK_EQ(pt_lheap_timer_start(&none, &t, 1, 0), -EINVAL);
    CHECK_EQ(pt_lheap_timer_start(&h, NULL, 1, 0), -EINVAL);
    CHECK_EQ(pt_lheap_timer_start(&h, &zero, 1, 0), -EINVAL);
    CHECK_EQ(pt_lheap_timer_start(&h, &t, 1, -1), -EINVAL);
    CHECK_EQ(pt_lheap_timer_modify(&h, &t, 1, -5, never_cb, NULL, 0), -EINVAL);
    CHECK_EQ(pt_lheap_timer_reset(&h, &zero, 1), -EINVAL);
    CHECK_EQ(pt_lheap_timer_stop(NULL), -EINVAL);
    CHECK_EQ(pt_lheap_timer_stop(&zero), -EINVAL);
    CHECK_EQ(pt_lheap_timer_stop_sync(&zero), -EINVAL);
    CHECK_EQ(pt_lheap_timer_status(&zero), PT_LHEAP_IDLE);
    CHECK_EQ(pt_lheap_timer_status(NULL), PT_LHEAP_IDLE);
    CHECK_EQ(pt_lheap_move(&h, NULL), -EINVAL);
    CHECK_EQ(pt_lheap_move(&none, &h), -EINVAL);
    CHECK_EQ(pt_lheap_verify(&none, true), -EINVAL);
    /* nothing changed: t idle, h empty */
    CHECK_LSTATUS(&t, PT_LHEAP_IDLE);
    CHECK_EQ(pt_lheap_len(&h), 0);
    CHECK_EQ(pt_lheap_check(&h, PT_MAXWHEN - 1, NULL), 0);
    CHECK_EQ(bad_calls, 0);
    /* destroy refuses while an entry stays, a zombie's too */
    CHECK_EQ(pt_lheap_timer_start(&h, &t, 100, 0), 0);
    CHECK_EQ(pt_lheap_destroy(&h), -EBUSY);
    CHECK_EQ(pt_lheap_timer_stop(&t), 1);
    CHECK_EQ(pt_lheap_destroy(&h), -EBUSY);
    CHECK_EQ(pt_lheap_check(&h, 100, NULL), 0); /* the zombie at the top goes */
    CHECK_EQ(bad_calls, 0);
    done();
}

/* ---- a random run against the model ----------------------------------------------- */

/* What the API promises, per timer: pending or not, its time and period;
 * a check at `now` runs each pending timer due by then once, a ticker
 * going on to its first tick after now. */
struct model {
    pt_nanos when; /* 0: not pending */
    pt_nanos period;
};

enum { MT = 24 };

void test_random_operations_match_the_model(void)
{
    for (uint64_t seed = 1; seed <= 40; seed++) {
        fresh();
        pt_lheap_timer t[MT];
        struct model m[MT];
        int fired[MT];
        memset(m, 0, sizeof m);
        memset(fired, 0, sizeof fired);
        for (int i = 0; i < MT; i++)
            pt_lheap_timer_init(&t[i], lcount_cb, &fired[i]);
        uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
        pt_nanos now = 1;
        for (int op = 0; op < 3000; op++) {
            uint64_t r = pt__xorshift64(&x);
            int i = (int)(r % MT);
            pt_nanos when = now + (pt_nanos)((r >> 8) % 1000);
            if ((r >> 20) % 50 == 0)
                when = -1; /* never */
            pt_nanos period = (r >> 30) % 4 == 0 ? 1 + (pt_nanos)((r >> 32) % 300) : 0;
            pt_nanos kept = when < 0 ? PT_MAXWHEN : when == 0 ? 1 : when;
            int pending = m[i].when > 0;
            switch ((r >> 40) % 7) {
            case 0:
                CHECK_EQ(pt_lheap_timer_start(&h, &t[i], when, period), pending ? -EBUSY : 0);
                if (!pending)
                    m[i] = (struct model){kept, period};
                break;
            case 1:
                CHECK_EQ(pt_lheap_timer_modify(&h, &t[i], when, period, lcount_cb, &fired[i], 0),
                         pending);
                m[i] = (struct model){kept, period};
                break;
            case 2:
                CHECK_EQ(pt_lheap_timer_reset(&h, &t[i], when), pending);
                m[i].when = kept;
                break;
            case 3:
                CHECK_EQ(pt_lheap_timer_stop(&t[i]), pending);
                m[i].when = 0;
                break;
            case 4:
                CHECK_EQ(pt_lheap_timer_stop_sync(&t[i]), pending);
                m[i].when = 0;
                break;
            default: {
                now += (pt_nanos)((r >> 44) % 400);
                int want = 0;
                int before[MT];
                memcpy(before, fired, sizeof before);
                for (int k = 0; k < MT; k++)
                    if (m[k].when > 0 && m[k].when <= now) {
                        want++;
                        if (m[k].period > 0) {
                            pt_nanos next =
                                m[k].when + m[k].period * (1 + (now - m[k].when) / m[k].period);
                            m[k].when = next;
                        } else {
                            m[k].when = 0;
                        }
                        before[k]++;
                    }
                CHECK_EQ(pt_lheap_check(&h, now, NULL), want);
                for (int k = 0; k < MT; k++)
                    CHECK_EQ(fired[k], before[k]);
            }
            }
            for (int k = 0; k < MT; k++)
                CHECK_EQ(pt_lheap_timer_status(&t[k]),
                         m[k].when > 0 ? PT_LHEAP_PENDING : PT_LHEAP_IDLE);
            CHECK_LHEAP(&h, true);
        }
        for (int k = 0; k < MT; k++)
            CHECK_EQ(pt_lheap_timer_stop_sync(&t[k]), m[k].when > 0);
        done();
    }
}
