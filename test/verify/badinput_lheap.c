/* The bad-input table's rows for lheap.h (test_badinput.c runs them and
 * checks that every function lheap.h declares has one): NULL,
 * uninitialised (zeroed, garbage) and destroyed heaps and timers, a
 * negative period, the wrong state; after each bad call the good heap and
 * its timers are as they were. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "badinput.h"
#include "harness.h"
#include "ptimer/lheap.h"

static void lcount_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    ++*(int *)arg;
}

struct bad_heaps {
    pt_lheap uninit, garbage, destroyed;
};

static void make_bad_heaps(struct bad_heaps *b)
{
    memset(&b->uninit, 0, sizeof b->uninit);
    memset(&b->garbage, 0xa5, sizeof b->garbage);
    CHECK_EQ(pt_lheap_init(&b->destroyed, NULL, NULL), 0);
    CHECK_EQ(pt_lheap_destroy(&b->destroyed), 0);
}

#define N_BAD_HEAPS 4
static pt_lheap *bad_heap(struct bad_heaps *b, int i)
{
    pt_lheap *h[N_BAD_HEAPS] = {NULL, &b->uninit, &b->garbage, &b->destroyed};
    return h[i];
}

/* A good heap with one pending timer and one stopped (a zombie). */
struct lgood {
    pt_lheap h;
    pt_lheap_timer live, stopped;
    int n;
};

static void make_lgood(struct lgood *g)
{
    CHECK_EQ(pt_lheap_init(&g->h, NULL, NULL), 0);
    g->n = 0;
    pt_lheap_timer_init(&g->live, lcount_cb, &g->n);
    pt_lheap_timer_init(&g->stopped, lcount_cb, &g->n);
    CHECK_EQ(pt_lheap_timer_start(&g->h, &g->live, 1000, 0), 0);
    CHECK_EQ(pt_lheap_timer_start(&g->h, &g->stopped, 500, 0), 0);
    CHECK_EQ(pt_lheap_timer_stop(&g->stopped), 1);
}

static void check_lgood_unchanged(struct lgood *g)
{
    CHECK_EQ(pt_lheap_timer_status(&g->live), PT_LHEAP_PENDING);
    CHECK_EQ(pt_lheap_timer_status(&g->stopped), PT_LHEAP_IDLE);
    CHECK_EQ(g->live.when, 1000);
    CHECK_EQ(pt_lheap_len(&g->h), 2); /* the zombie's entry stays */
    CHECK_EQ(pt_lheap_zombies(&g->h), 1);
    CHECK_EQ(pt_lheap_next(&g->h), 500);
    CHECK_EQ(pt_lheap_verify(&g->h, true), 0);
    CHECK_EQ(g->n, 0);
}

static void free_lgood(struct lgood *g)
{
    CHECK_EQ(pt_lheap_timer_stop_sync(&g->live), 1);
    CHECK_EQ(pt_lheap_timer_stop_sync(&g->stopped), 0);
    CHECK_EQ(pt_lheap_destroy(&g->h), 0);
}

static void make_bad_ltimers(pt_lheap_timer *zero, pt_lheap_timer *garbage)
{
    memset(zero, 0, sizeof *zero);
    memset(garbage, 0xa5, sizeof *garbage);
}

static void row_pt_lheap_init(void)
{
    CHECK_EQ(pt_lheap_init(NULL, NULL, NULL), -EINVAL);
    /* re-initialising a destroyed heap makes it usable again */
    pt_lheap h;
    CHECK_EQ(pt_lheap_init(&h, NULL, NULL), 0);
    CHECK_EQ(pt_lheap_destroy(&h), 0);
    CHECK_EQ(pt_lheap_check(&h, 1, NULL), -EINVAL);
    CHECK_EQ(pt_lheap_init(&h, NULL, NULL), 0);
    CHECK_EQ(pt_lheap_check(&h, 1, NULL), 0);
    CHECK_EQ(pt_lheap_destroy(&h), 0);
}

static void row_pt_lheap_destroy(void)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    for (int i = 0; i < N_BAD_HEAPS; i++)
        CHECK_EQ(pt_lheap_destroy(bad_heap(&b, i)), -EINVAL);
    struct lgood g;
    make_lgood(&g);
    CHECK_EQ(pt_lheap_destroy(&g.h), -EBUSY); /* a pending timer, and a zombie */
    check_lgood_unchanged(&g);
    free_lgood(&g);
    CHECK_EQ(pt_lheap_destroy(&g.h), -EINVAL); /* after destroy */
}

static void row_pt_lheap_set_slack(void)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    for (int i = 0; i < N_BAD_HEAPS; i++)
        CHECK_EQ(pt_lheap_set_slack(bad_heap(&b, i), 1000), -EINVAL);
    struct lgood g;
    make_lgood(&g);
    CHECK_EQ(pt_lheap_set_slack(&g.h, -1), -EINVAL);
    CHECK_EQ(g.h.slack, 0);
    check_lgood_unchanged(&g);
    free_lgood(&g);
    CHECK_EQ(pt_lheap_set_slack(&g.h, 1000), -EINVAL); /* after destroy */
}

static void row_pt_lheap_timer_init(void)
{
    pt_lheap_timer_init(NULL, lcount_cb, NULL); /* NULL: nothing happens */
    int n = 0;
    pt_lheap_timer t;
    memset(&t, 0xa5, sizeof t);
    pt_lheap_timer_init(&t, lcount_cb, &n); /* garbage before: usable after */
    CHECK_EQ(pt_lheap_timer_status(&t), PT_LHEAP_IDLE);
    CHECK_EQ(pt_lheap_timer_stop(&t), 0);
}

/* Each arm with a bad heap, a bad timer or a bad period: -EINVAL, the good
 * heap unchanged. kind: 0 start, 1 reset, 2 modify. */
static int arm(int kind, pt_lheap *h, pt_lheap_timer *t, pt_nanos when, pt_nanos period)
{
    static int n;
    return kind == 0   ? pt_lheap_timer_start(h, t, when, period)
           : kind == 1 ? pt_lheap_timer_reset(h, t, when)
                       : pt_lheap_timer_modify(h, t, when, period, lcount_cb, &n, 0);
}

static void arm_rows(int kind)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    struct lgood g;
    make_lgood(&g);
    pt_lheap_timer zero, garbage, idle;
    make_bad_ltimers(&zero, &garbage);
    int n = 0;
    pt_lheap_timer_init(&idle, lcount_cb, &n);
    for (int i = 0; i < N_BAD_HEAPS; i++) {
        CHECK_EQ(arm(kind, bad_heap(&b, i), &idle, 10, 0), -EINVAL);
        CHECK_EQ(arm(kind, bad_heap(&b, i), &g.live, 10, 0), -EINVAL);
    }
    CHECK_EQ(arm(kind, &g.h, NULL, 10, 0), -EINVAL);
    CHECK_EQ(arm(kind, &g.h, &zero, 10, 0), -EINVAL);
    CHECK_EQ(arm(kind, &g.h, &garbage, 10, 0), -EINVAL);
    if (kind != 1) {
        CHECK_EQ(arm(kind, &g.h, &idle, 10, -1), -EINVAL);
        CHECK_EQ(arm(kind, &g.h, &g.live, 10, INT64_MIN), -EINVAL);
    }
    if (kind == 0)
        CHECK_EQ(arm(0, &g.h, &g.live, 10, 0), -EBUSY); /* already pending */
    CHECK_EQ(pt_lheap_timer_status(&idle), PT_LHEAP_IDLE);
    check_lgood_unchanged(&g);
    free_lgood(&g);
}

static void row_pt_lheap_timer_start(void)
{
    arm_rows(0);
}

static void row_pt_lheap_timer_reset(void)
{
    arm_rows(1);
}

static void row_pt_lheap_timer_modify(void)
{
    arm_rows(2);
}

/* stop, stop_sync, status: bad timers; no heap is involved. */
static void row_pt_lheap_timer_stop(void)
{
    pt_lheap_timer zero, garbage;
    make_bad_ltimers(&zero, &garbage);
    struct lgood g;
    make_lgood(&g);
    CHECK_EQ(pt_lheap_timer_stop(NULL), -EINVAL);
    CHECK_EQ(pt_lheap_timer_stop(&zero), -EINVAL);
    CHECK_EQ(pt_lheap_timer_stop(&garbage), -EINVAL);
    CHECK_EQ(pt_lheap_timer_stop(&g.stopped), 0); /* stopped twice: 0, nothing else */
    check_lgood_unchanged(&g);
    free_lgood(&g);
}

static void row_pt_lheap_timer_stop_sync(void)
{
    pt_lheap_timer zero, garbage;
    make_bad_ltimers(&zero, &garbage);
    struct lgood g;
    make_lgood(&g);
    CHECK_EQ(pt_lheap_timer_stop_sync(NULL), -EINVAL);
    CHECK_EQ(pt_lheap_timer_stop_sync(&zero), -EINVAL);
    CHECK_EQ(pt_lheap_timer_stop_sync(&garbage), -EINVAL);
    check_lgood_unchanged(&g);
    free_lgood(&g);
}

static void row_pt_lheap_timer_status(void)
{
    pt_lheap_timer zero, garbage;
    make_bad_ltimers(&zero, &garbage);
    CHECK_EQ(pt_lheap_timer_status(NULL), PT_LHEAP_IDLE);
    CHECK_EQ(pt_lheap_timer_status(&zero), PT_LHEAP_IDLE);
    CHECK_EQ(pt_lheap_timer_status(&garbage), PT_LHEAP_IDLE);
}

static void row_pt_lheap_timer_in_heap(void)
{
    pt_lheap_timer zero, garbage;
    make_bad_ltimers(&zero, &garbage);
    CHECK(!pt_lheap_timer_in_heap(NULL));
    CHECK(!pt_lheap_timer_in_heap(&zero));
    CHECK(!pt_lheap_timer_in_heap(&garbage));
    struct lgood g;
    make_lgood(&g);
    CHECK(pt_lheap_timer_in_heap(&g.live));
    CHECK(pt_lheap_timer_in_heap(&g.stopped)); /* a zombie keeps its entry */
    check_lgood_unchanged(&g);
    free_lgood(&g);
}

static void row_pt_lheap_timer_running(void)
{
    pt_lheap_timer zero, garbage;
    make_bad_ltimers(&zero, &garbage);
    CHECK(!pt_lheap_timer_running(NULL));
    CHECK(!pt_lheap_timer_running(&zero));
    CHECK(!pt_lheap_timer_running(&garbage));
    struct lgood g;
    make_lgood(&g);
    CHECK(!pt_lheap_timer_running(&g.live)); /* pending, not running */
    CHECK(!pt_lheap_timer_running(&g.stopped));
    check_lgood_unchanged(&g);
    free_lgood(&g);
}

/* check, next, len, zombies, verify: bad heaps. */
static void row_pt_lheap_check(void)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    pt_nanos poll = 7;
    for (int i = 0; i < N_BAD_HEAPS; i++)
        CHECK_EQ(pt_lheap_check(bad_heap(&b, i), 1, &poll), -EINVAL);
    CHECK_EQ(poll, 7); /* untouched */
    /* nothing due: nothing runs (the zombie, over a quarter, is cleared) */
    struct lgood g;
    make_lgood(&g);
    CHECK_EQ(pt_lheap_check(&g.h, 499, &poll), 0);
    CHECK_EQ(poll, 1000);
    CHECK_EQ(pt_lheap_timer_status(&g.live), PT_LHEAP_PENDING);
    CHECK_EQ(pt_lheap_len(&g.h), 1);
    CHECK_EQ(g.n, 0);
    free_lgood(&g);
}

BADINPUT_FIRING_ROW(pt_lheap_firing)

static void row_pt_lheap_next(void)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    for (int i = 0; i < N_BAD_HEAPS; i++)
        CHECK_EQ(pt_lheap_next(bad_heap(&b, i)), 0);
}

static void row_pt_lheap_len(void)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    for (int i = 0; i < N_BAD_HEAPS; i++) {
        CHECK_EQ(pt_lheap_len(bad_heap(&b, i)), 0);
        CHECK_EQ(pt_lheap_zombies(bad_heap(&b, i)), 0);
    }
}

static void row_pt_lheap_move(void)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    struct lgood g;
    make_lgood(&g);
    for (int i = 0; i < N_BAD_HEAPS; i++) {
        CHECK_EQ(pt_lheap_move(bad_heap(&b, i), &g.h), -EINVAL);
        CHECK_EQ(pt_lheap_move(&g.h, bad_heap(&b, i)), -EINVAL);
    }
    CHECK_EQ(pt_lheap_move(&g.h, &g.h), -EINVAL);
    check_lgood_unchanged(&g);
    free_lgood(&g);
}

static void row_pt_lheap_verify(void)
{
    struct bad_heaps b;
    make_bad_heaps(&b);
    for (int i = 0; i < N_BAD_HEAPS; i++)
        CHECK_EQ(pt_lheap_verify(bad_heap(&b, i), true), -EINVAL);
    /* corruption it must see: an entry keyed off its timer's time, a
     * zombie count off by one */
    struct lgood g;
    make_lgood(&g);
    CHECK_EQ(pt_lheap_verify(&g.h, true), 0);
    g.live.when_heap++;
    CHECK_EQ(pt_lheap_verify(&g.h, true), -EUCLEAN);
    CHECK(strstr(pt_lheap_verify_report(), "heap copy") != NULL);
    g.live.when_heap--;
    atomic_fetch_add(&g.h.zombies, 1);
    CHECK_EQ(pt_lheap_verify(&g.h, false), 0); /* a stop may be on its way */
    CHECK_EQ(pt_lheap_verify(&g.h, true), -EUCLEAN);
    CHECK(strstr(pt_lheap_verify_report(), "zombies") != NULL);
    atomic_fetch_sub(&g.h.zombies, 1);
    CHECK_EQ(pt_lheap_verify(&g.h, true), 0); /* and the report is cleared */
    CHECK_EQ(pt_lheap_verify_report()[0], 0);
    check_lgood_unchanged(&g);
    free_lgood(&g);
}

const struct badinput_row pt_badinput_lheap_rows[] = {
    {"pt_lheap_init", row_pt_lheap_init},
    {"pt_lheap_set_slack", row_pt_lheap_set_slack},
    {"pt_lheap_destroy", row_pt_lheap_destroy},
    {"pt_lheap_timer_init", row_pt_lheap_timer_init},
    {"pt_lheap_timer_start", row_pt_lheap_timer_start},
    {"pt_lheap_timer_stop", row_pt_lheap_timer_stop},
    {"pt_lheap_timer_reset", row_pt_lheap_timer_reset},
    {"pt_lheap_timer_modify", row_pt_lheap_timer_modify},
    {"pt_lheap_timer_stop_sync", row_pt_lheap_timer_stop_sync},
    {"pt_lheap_timer_status", row_pt_lheap_timer_status},
    {"pt_lheap_timer_in_heap", row_pt_lheap_timer_in_heap},
    {"pt_lheap_timer_running", row_pt_lheap_timer_running},
    {"pt_lheap_check", row_pt_lheap_check},
    {"pt_lheap_next", row_pt_lheap_next},
    {"pt_lheap_firing", row_pt_lheap_firing},
    {"pt_lheap_move", row_pt_lheap_move},
    {"pt_lheap_len", row_pt_lheap_len},
    {"pt_lheap_zombies", row_pt_lheap_len},
    {"pt_lheap_verify", row_pt_lheap_verify},
    {"pt_lheap_verify_report", row_pt_lheap_verify},
};
const size_t pt_badinput_lheap_nrows =
    sizeof pt_badinput_lheap_rows / sizeof pt_badinput_lheap_rows[0];
