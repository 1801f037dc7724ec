/* The bad-input table's rows for pwheel.h (test_badinput.c runs them and
 * checks that every function pwheel.h declares has one). The same classes
 * as the heaps' rows: NULL, uninitialised (zeroed, garbage), destroyed,
 * negative and out of range, wrong state; after each bad call the good
 * wheel and its timers are as they were. */
#include <errno.h>
#include <string.h>

#include "badinput.h"
#include "harness.h"
#include "ptimer/pwheel.h"

#define CHECK_WSTATUS(t, s) CHECK_EQ(pt_wheel_timer_status(t), (s))

static void wcount_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    ++*(int *)arg;
}

struct bad_wheels {
    pt_wheel uninit, garbage, destroyed;
};

static void make_bad_wheels(struct bad_wheels *b)
{
    memset(&b->uninit, 0, sizeof b->uninit);
    memset(&b->garbage, 0xa5, sizeof b->garbage);
    CHECK_EQ(pt_wheel_init(&b->destroyed, 0, NULL, NULL), 0);
    CHECK_EQ(pt_wheel_destroy(&b->destroyed), 0);
}

#define N_BAD_WHEELS 4
static pt_wheel *bad_wheel(struct bad_wheels *b, int i)
{
    pt_wheel *w[N_BAD_WHEELS] = {NULL, &b->uninit, &b->garbage, &b->destroyed};
    return w[i];
}

/* A good wheel with one pending timer and one stopped one. */
struct wgood {
    pt_wheel w;
    pt_wheel_timer live, stopped;
    int n;
};

static void make_wgood(struct wgood *g)
{
    CHECK_EQ(pt_wheel_init(&g->w, 0, NULL, NULL), 0);
    g->n = 0;
    pt_wheel_timer_init(&g->live, wcount_cb, &g->n);
    pt_wheel_timer_init(&g->stopped, wcount_cb, &g->n);
    CHECK_EQ(pt_wheel_timer_start(&g->w, &g->live, 1000, 0), 0);
    CHECK_EQ(pt_wheel_timer_start(&g->w, &g->stopped, 500, 0), 0);
    CHECK_EQ(pt_wheel_timer_stop(&g->stopped), 1);
}

static void check_wgood_unchanged(struct wgood *g)
{
    CHECK_WSTATUS(&g->live, PT_WHEEL_PENDING);
    CHECK_WSTATUS(&g->stopped, PT_WHEEL_IDLE);
    CHECK_EQ(g->live.when, 1000);
    CHECK_EQ(pt_wheel_len(&g->w), 1);
    CHECK_EQ(pt_wheel_next(&g->w), 500); /* the stopped one's bound, not yet raised */
    CHECK_EQ(pt_wheel_verify(&g->w, true), 0);
    CHECK_EQ(g->n, 0);
}

static void free_wgood(struct wgood *g)
{
    CHECK_EQ(pt_wheel_timer_stop_sync(&g->live), 1);
    CHECK_EQ(pt_wheel_timer_stop_sync(&g->stopped), 0);
    CHECK_EQ(pt_wheel_destroy(&g->w), 0);
}

static void make_bad_wtimers(pt_wheel_timer *zero, pt_wheel_timer *garbage)
{
    memset(zero, 0, sizeof *zero);
    memset(garbage, 0xa5, sizeof *garbage);
}

static void row_pt_wheel_init(void)
{
    CHECK_EQ(pt_wheel_init(NULL, 0, NULL, NULL), -EINVAL);
    pt_wheel w;
    memset(&w, 0x5a, sizeof w);
    /* a tick that is not a power of two, or out of [2^10, 2^20] ns */
    static const pt_nanos bad[] = {-1,        -1024,    1, 512, 1000, 3 << 10, (pt_nanos)1 << 21,
                                   INT64_MIN, INT64_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ(pt_wheel_init(&w, bad[i], NULL, NULL), -EINVAL);
    CHECK_EQ(w.magic, 0x5a5a5a5au); /* untouched */
    /* re-initialising a destroyed wheel makes it usable again */
    CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
    CHECK_EQ(pt_wheel_destroy(&w), 0);
    CHECK_EQ(pt_wheel_check(&w, 1, NULL), -EINVAL);
    CHECK_EQ(pt_wheel_init(&w, 1 << 10, NULL, NULL), 0);
    CHECK_EQ(pt_wheel_check(&w, 1, NULL), 0);
    CHECK_EQ(pt_wheel_destroy(&w), 0);
}

struct wdestroy_arg {
    pt_wheel *w;
    int r;
};

static void destroy_own_wheel_cb(void *arg, uintptr_t seq)
{
    (void)seq;
    struct wdestroy_arg *a = arg;
    a->r = pt_wheel_destroy(a->w);
}

static void row_pt_wheel_set_slack(void)
{
    struct bad_wheels b;
    make_bad_wheels(&b);
    for (int i = 0; i < N_BAD_WHEELS; i++)
        CHECK_EQ(pt_wheel_set_slack(bad_wheel(&b, i), 1000), -EINVAL);
    struct wgood g;
    make_wgood(&g);
    CHECK_EQ(pt_wheel_set_slack(&g.w, -1), -EINVAL);
    CHECK_EQ(g.w.slack, 0);
    check_wgood_unchanged(&g);
    free_wgood(&g);
    CHECK_EQ(pt_wheel_set_slack(&g.w, 1000), -EINVAL); /* after destroy */
}

static void row_pt_wheel_destroy(void)
{
    struct bad_wheels b;
    make_bad_wheels(&b);
    for (int i = 0; i < N_BAD_WHEELS; i++)
        CHECK_EQ(pt_wheel_destroy(bad_wheel(&b, i)), -EINVAL);
    struct wgood g;
    make_wgood(&g);
    CHECK_EQ(pt_wheel_destroy(&g.w), -EBUSY); /* a pending timer */
    check_wgood_unchanged(&g);
    free_wgood(&g);
    CHECK_EQ(pt_wheel_destroy(&g.w), -EINVAL); /* after destroy */
    /* from one of its own callbacks */
    pt_wheel w;
    CHECK_EQ(pt_wheel_init(&w, 0, NULL, NULL), 0);
    struct wdestroy_arg arg = {&w, 1};
    pt_wheel_timer t;
    pt_wheel_timer_init(&t, destroy_own_wheel_cb, &arg);
    CHECK_EQ(pt_wheel_timer_start(&w, &t, 10, 0), 0);
    CHECK_EQ(pt_wheel_check(&w, 10, NULL), 1);
    CHECK_EQ(arg.r, -EBUSY);
    CHECK_EQ(pt_wheel_destroy(&w), 0);
}

static void row_pt_wheel_timer_init(void)
{
    pt_wheel_timer_init(NULL, wcount_cb, NULL); /* NULL: nothing happens */
    int n = 0;
    pt_wheel_timer t;
    pt_wheel_timer_init(&t, wcount_cb, &n);
    pt_wheel_timer_init(&t, wcount_cb, &n); /* again, while idle: allowed */
    CHECK_WSTATUS(&t, PT_WHEEL_IDLE);
}

/* start, reset and modify share their argument classes */
static void warm_rows(int kind)
{
    struct bad_wheels b;
    make_bad_wheels(&b);
    struct wgood g;
    make_wgood(&g);
    pt_wheel_timer zero, garbage;
    make_bad_wtimers(&zero, &garbage);
    int n = 0;
    pt_wheel_timer idle;
    pt_wheel_timer_init(&idle, wcount_cb, &n);
#define ARM(w, t, when, period)                                                                    \
    (kind == 0   ? pt_wheel_timer_start((w), (t), (when), (period))                                \
     : kind == 1 ? pt_wheel_timer_reset((w), (t), (when))                                          \
                 : pt_wheel_timer_modify((w), (t), (when), (period), wcount_cb, &n, 1))
    for (int i = 0; i < N_BAD_WHEELS; i++) {
        CHECK_EQ(ARM(bad_wheel(&b, i), &idle, 100, 0), -EINVAL);
        CHECK_EQ(ARM(bad_wheel(&b, i), &g.live, 100, 0), -EINVAL);
        CHECK_WSTATUS(&idle, PT_WHEEL_IDLE);
    }
    CHECK_EQ(ARM(&g.w, NULL, 100, 0), -EINVAL);
    CHECK_EQ(ARM(&g.w, &zero, 100, 0), -EINVAL);
    CHECK_EQ(ARM(&g.w, &garbage, 100, 0), -EINVAL);
    if (kind != 1) {
        CHECK_EQ(ARM(&g.w, &idle, 100, -1), -EINVAL);
        CHECK_EQ(ARM(&g.w, &idle, 100, INT64_MIN), -EINVAL);
        CHECK_EQ(ARM(&g.w, &g.live, 100, -1), -EINVAL);
        CHECK_WSTATUS(&idle, PT_WHEEL_IDLE);
    }
    if (kind == 0)
        CHECK_EQ(ARM(&g.w, &g.live, 100, 0), -EBUSY);
    check_wgood_unchanged(&g);
    /* not errors: a negative when is never, INT64_MIN too */
    CHECK(ARM(&g.w, &idle, INT64_MIN, 0) >= 0);
    CHECK_EQ(pt_wheel_check(&g.w, INT64_MAX, NULL), 1); /* only live */
    CHECK_WSTATUS(&idle, PT_WHEEL_PENDING);
    CHECK_EQ(pt_wheel_timer_stop_sync(&idle), 1);
    CHECK_EQ(pt_wheel_destroy(&g.w), 0);
#undef ARM
}

static void row_pt_wheel_timer_start(void)
{
    warm_rows(0);
}
static void row_pt_wheel_timer_reset(void)
{
    warm_rows(1);
}
static void row_pt_wheel_timer_modify(void)
{
    warm_rows(2);
}

static void stop_rows(int (*stop)(pt_wheel_timer *))
{
    pt_wheel_timer zero, garbage;
    make_bad_wtimers(&zero, &garbage);
    CHECK_EQ(stop(NULL), -EINVAL);
    CHECK_EQ(stop(&zero), -EINVAL);
    CHECK_EQ(stop(&garbage), -EINVAL);
    struct wgood g;
    make_wgood(&g);
    CHECK_EQ(stop(&g.stopped), 0); /* wrong state is not an error */
    check_wgood_unchanged(&g);
    free_wgood(&g);
    /* a timer stopped before its wheel was destroyed names no wheel */
    CHECK_EQ(stop(&g.stopped), 0);
    CHECK_EQ(stop(&g.live), 0);
}

static void row_pt_wheel_timer_stop(void)
{
    stop_rows(pt_wheel_timer_stop);
}
static void row_pt_wheel_timer_stop_sync(void)
{
    stop_rows(pt_wheel_timer_stop_sync);
}

static void row_pt_wheel_timer_status(void)
{
    CHECK_WSTATUS(NULL, PT_WHEEL_IDLE);
    struct wgood g;
    make_wgood(&g);
    CHECK_WSTATUS(&g.live, PT_WHEEL_PENDING);
    free_wgood(&g);
}

static void row_pt_wheel_check(void)
{
    struct bad_wheels b;
    make_bad_wheels(&b);
    pt_nanos next = 77;
    for (int i = 0; i < N_BAD_WHEELS; i++) {
        CHECK_EQ(pt_wheel_check(bad_wheel(&b, i), 1, &next), -EINVAL);
        CHECK_EQ(next, 77); /* nothing written */
    }
    struct wgood g;
    make_wgood(&g);
    /* a negative now reads the clock, as 0 does: the live timer is due */
    CHECK_EQ(pt_wheel_check(&g.w, -5, NULL), 1);
    CHECK_EQ(g.n, 1);
    CHECK_EQ(pt_wheel_destroy(&g.w), 0);
}

BADINPUT_FIRING_ROW(pt_wheel_firing)

static void row_pt_wheel_next(void)
{
    struct bad_wheels b;
    make_bad_wheels(&b);
    for (int i = 0; i < N_BAD_WHEELS; i++)
        CHECK_EQ(pt_wheel_next(bad_wheel(&b, i)), 0);
}

static void row_pt_wheel_move(void)
{
    struct bad_wheels b;
    make_bad_wheels(&b);
    struct wgood g;
    make_wgood(&g);
    for (int i = 0; i < N_BAD_WHEELS; i++) {
        CHECK_EQ(pt_wheel_move(bad_wheel(&b, i), &g.w), -EINVAL);
        CHECK_EQ(pt_wheel_move(&g.w, bad_wheel(&b, i)), -EINVAL);
    }
    CHECK_EQ(pt_wheel_move(&g.w, &g.w), -EINVAL);
    check_wgood_unchanged(&g);
    free_wgood(&g);
}

static void row_pt_wheel_len(void)
{
    struct bad_wheels b;
    make_bad_wheels(&b);
    for (int i = 0; i < N_BAD_WHEELS; i++)
        CHECK_EQ(pt_wheel_len(bad_wheel(&b, i)), 0);
}

static void row_pt_wheel_verify(void)
{
    struct bad_wheels b;
    make_bad_wheels(&b);
    for (int i = 0; i < N_BAD_WHEELS; i++)
        CHECK_EQ(pt_wheel_verify(bad_wheel(&b, i), true), -EINVAL);
    /* a wheel whose occupancy bit lies is caught and reported */
    struct wgood g;
    make_wgood(&g);
    uint64_t saved = g.w.occupied[PT_WHEEL_LEVELS - 1];
    g.w.occupied[PT_WHEEL_LEVELS - 1] ^= UINT64_C(1) << 63; /* nothing filed that far */
    CHECK_EQ(pt_wheel_verify(&g.w, true), -EUCLEAN);
    CHECK(strstr(pt_wheel_verify_report(), "occupancy") != NULL);
    g.w.occupied[PT_WHEEL_LEVELS - 1] = saved;
    /* and a timer under a clear bit */
    for (unsigned l = 0; l < PT_WHEEL_LEVELS; l++)
        if (g.w.occupied[l]) {
            saved = g.w.occupied[l];
            g.w.occupied[l] = 0;
            CHECK_EQ(pt_wheel_verify(&g.w, true), -EUCLEAN);
            CHECK(strstr(pt_wheel_verify_report(), "len 1") != NULL);
            g.w.occupied[l] = saved;
            break;
        }
    CHECK_EQ(pt_wheel_verify(&g.w, true), 0);
    CHECK_EQ(pt_wheel_verify_report()[0], 0);
    free_wgood(&g);
}

const struct badinput_row pt_badinput_pwheel_rows[] = {
    {"pt_wheel_init", row_pt_wheel_init},
    {"pt_wheel_set_slack", row_pt_wheel_set_slack},
    {"pt_wheel_destroy", row_pt_wheel_destroy},
    {"pt_wheel_timer_init", row_pt_wheel_timer_init},
    {"pt_wheel_timer_start", row_pt_wheel_timer_start},
    {"pt_wheel_timer_stop", row_pt_wheel_timer_stop},
    {"pt_wheel_timer_reset", row_pt_wheel_timer_reset},
    {"pt_wheel_timer_modify", row_pt_wheel_timer_modify},
    {"pt_wheel_timer_stop_sync", row_pt_wheel_timer_stop_sync},
    {"pt_wheel_timer_status", row_pt_wheel_timer_status},
    {"pt_wheel_check", row_pt_wheel_check},
    {"pt_wheel_next", row_pt_wheel_next},
    {"pt_wheel_firing", row_pt_wheel_firing},
    {"pt_wheel_move", row_pt_wheel_move},
    {"pt_wheel_len", row_pt_wheel_len},
    {"pt_wheel_verify", row_pt_wheel_verify},
    {"pt_wheel_verify_report", row_pt_wheel_verify},
};
const size_t pt_badinput_pwheel_nrows =
    sizeof pt_badinput_pwheel_rows / sizeof pt_badinput_pwheel_rows[0];
