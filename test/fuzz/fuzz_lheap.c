/* Differential fuzzing of Go 1.23's family: the input is decoded into
 * operations on NH heaps and NT timers (start, stop, reset, modify,
 * stop_sync, move, check at a time, destroy, and what each timer's
 * callback does to its own timer), run against lheap and against
 * ref_wheel.h's timers (what every family promises), and after every
 * operation the two must agree:
 *  - every return value;
 *  - which timers fire in each check, which checks every heap at one
 *    time: exactly those armed with when <= now, once each, with their
 *    seq, never early, and what the callbacks' own calls return (which
 *    heap holds a timer is lheap's business: a stopped timer keeps its
 *    entry until its heap looks, and is revived there);
 *  - each timer's status;
 *  - the heaps' next times, together a lower bound of the earliest armed
 *    time, nonzero while one is armed;
 *  - pt_lheap_verify on every heap, its zombie count included, and a
 *    destroy refused exactly while the heap holds an entry;
 *  - at the end, after stop_sync of every timer, every heap destroys.
 * Any disagreement aborts with a message.
 *
 * Built two ways: as a libFuzzer target (scripts/verify.sh, clang) and,
 * with PT_FUZZ_ENTRY renamed, into test/verify's replay test. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_fail.h"
#include "ptimer/lheap.h"
#include "ref_wheel.h"

#ifndef PT_FUZZ_ENTRY
#define PT_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

#define NH 3
#define NT 8
#define MAX_OPS 400

enum action { ACT_NONE, ACT_STOP, ACT_RESET, ACT_STOP_SYNC, ACT_COUNT };

struct ctx {
    int idx;
    enum action action; /* done by the next callback, then cleared */
    int reset_heap;
    pt_nanos reset_in; /* ACT_RESET: when = now + reset_in (negative: never) */
};

static struct {
    const uint8_t *p;
    size_t n;
    pt_lheap w[NH];
    pt_lheap_timer t[NT];
    struct ctx ctx[NT];
    struct ref_wtimer ref[NT];
    pt_nanos now;
    bool checking;  /* inside a check */
    bool due[NT];   /* what the reference says this check must run */
    bool again[NT]; /* re-armed by its callback at or before now: it may run again */
    int refired;    /* such second runs in this check */
    int fired[NT];
    size_t op;
} F;

#define fail(...) fuzz_fail("fuzz_lheap", F.op, __VA_ARGS__)
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fail(__VA_ARGS__);                                                                     \
    } while (0)

#include "wheel_input.h"

static void wake(void *ctx, pt_nanos when)
{
    (void)ctx;
    EXPECT(when > 0 && when != PT_MAXWHEN, "wake with %lld", (long long)when);
}

static void check_all(void)
{
    pt_nanos first = 0;
    for (int i = 0; i < NT; i++) {
        enum pt_lheap_timer_status s = pt_lheap_timer_status(&F.t[i]);
        enum pt_lheap_timer_status want = F.ref[i].armed ? PT_LHEAP_PENDING : PT_LHEAP_IDLE;
        EXPECT(s == want, "timer %d: status %d, reference %d", i, s, want);
        if (F.ref[i].armed)
            EXPECT(F.t[i].when == F.ref[i].when, "timer %d: when %lld, reference %lld", i,
                   (long long)F.t[i].when, (long long)F.ref[i].when);
        if (F.ref[i].armed && F.ref[i].when != PT_MAXWHEN && (!first || F.ref[i].when < first))
            first = F.ref[i].when;
    }
    pt_nanos next = 0;
    for (int h = 0; h < NH; h++) {
        EXPECT(pt_lheap_verify(&F.w[h], true) == 0, "heap %d: %s", h, pt_lheap_verify_report());
        pt_nanos n = pt_lheap_next(&F.w[h]);
        if (n && (!next || n < next))
            next = n;
    }
    if (first)
        EXPECT(next != 0 && next <= first, "next %lld, a timer is armed at %lld", (long long)next,
               (long long)first);
}

/* reference: arm timer i at when (fields already set) */
static void ref_arm(int i, pt_nanos when)
{
    F.ref[i].armed = true;
    F.ref[i].when = ref_wnorm(when);
}

static void cb(void *arg, uintptr_t seq)
{
    struct ctx *c = arg;
    int i = c->idx;
    struct ref_wtimer *r = &F.ref[i];
    EXPECT(F.checking, "timer %d fired outside a check", i);
    /* A second run in one check of every heap: the callback re-armed it at
     * or before now onto a heap checked after the one that ran it. */
    bool second = F.fired[i] == 1 && F.again[i];
    EXPECT((F.due[i] && F.fired[i] == 0) || second,
           "timer %d fired %d times, due %d (when %lld, now %lld)", i, F.fired[i] + 1, F.due[i],
           (long long)r->when, (long long)F.now);
    F.again[i] = false;
    F.refired += second;
    EXPECT(seq == r->seq, "timer %d fired with seq %lu, want %lu", i, (unsigned long)seq,
           (unsigned long)r->seq);
    F.fired[i]++;
    /* the reference's firing: a one-shot is running, a ticker moved on */
    if (r->period > 0) {
        r->when = ref_wticker_next(r->when, r->period, F.now);
    } else {
        r->armed = false;
        r->running = true;
    }
    EXPECT(pt_lheap_timer_status(&F.t[i]) == (r->period > 0 ? PT_LHEAP_PENDING : PT_LHEAP_RUNNING),
           "timer %d: status %d in its callback", i, pt_lheap_timer_status(&F.t[i]));
    enum action a = c->action;
    c->action = ACT_NONE;
    int got, want;
    switch (a) {
    case ACT_STOP:
    case ACT_STOP_SYNC:
        got = a == ACT_STOP ? pt_lheap_timer_stop(&F.t[i]) : pt_lheap_timer_stop_sync(&F.t[i]);
        want = r->armed;
        r->armed = false;
        if (a == ACT_STOP_SYNC)
            r->running = false; /* released */
        EXPECT(got == want, "timer %d: stop from its callback %d, want %d", i, got, want);
        break;
    case ACT_RESET: {
        pt_nanos when = c->reset_in < 0 ? -1 : sat_add(F.now, c->reset_in);
        got = pt_lheap_timer_reset(&F.w[c->reset_heap], &F.t[i], when);
        want = r->armed;
        ref_arm(i, when);
        F.again[i] = F.fired[i] == 1 && r->when != PT_MAXWHEN && r->when <= F.now;
        EXPECT(got == want, "timer %d: reset from its callback %d, want %d", i, got, want);
        break;
    }
    default:
        break;
    }
}

/* A check of every heap at one time: together they run, once each,
 * exactly the timers armed with when <= now. */
static void op_check(void)
{
    int want = 0;
    for (int i = 0; i < NT; i++) {
        struct ref_wtimer *r = &F.ref[i];
        F.due[i] = r->armed && r->when != PT_MAXWHEN && r->when <= F.now;
        F.fired[i] = 0;
        F.again[i] = false;
        want += F.due[i];
    }
    F.refired = 0;
    F.checking = true;
    int got = 0;
    for (int h = 0; h < NH; h++) {
        pt_nanos poll_until = -7;
        int ran = pt_lheap_check(&F.w[h], F.now, &poll_until);
        EXPECT(ran >= 0 && poll_until >= 0, "check of heap %d: %d, poll_until %lld", h, ran,
               (long long)poll_until);
        got += ran;
    }
    F.checking = false;
    for (int i = 0; i < NT; i++) {
        EXPECT(F.fired[i] >= (int)F.due[i],
               "timer %d: fired %d times, due %d (when %lld, now %lld)", i, F.fired[i], F.due[i],
               (long long)F.ref[i].when, (long long)F.now);
        F.ref[i].running = false; /* every callback has returned */
    }
    EXPECT(got == want + F.refired, "the checks ran %d, want %d and %d again", got, want,
           F.refired);
}

static void op_arm(int kind, int h, int i, pt_nanos when, pt_nanos period, uintptr_t seq)
{
    struct ref_wtimer *r = &F.ref[i];
    int got = kind == 0 ? pt_lheap_timer_start(&F.w[h], &F.t[i], when, period)
              : kind == 1
                  ? pt_lheap_timer_reset(&F.w[h], &F.t[i], when)
                  : pt_lheap_timer_modify(&F.w[h], &F.t[i], when, period, cb, &F.ctx[i], seq);
    int want;
    if (kind != 1 && period < 0) {
        want = -EINVAL;
    } else if (kind == 0 && r->armed) {
        want = -EBUSY;
    } else {
        want = kind == 0 ? 0 : r->armed;
        if (kind != 1) {
            r->period = period;
            if (kind == 2)
                r->seq = seq;
        }
        ref_arm(i, when);
    }
    EXPECT(got == want, "%s of timer %d on heap %d returned %d, want %d",
           kind == 0   ? "start"
           : kind == 1 ? "reset"
                       : "modify",
           i, h, got, want);
}

int PT_FUZZ_ENTRY(const uint8_t *data, size_t size);
int PT_FUZZ_ENTRY(const uint8_t *data, size_t size)
{
    memset(&F, 0, sizeof F);
    F.p = data;
    F.n = size;
    F.now = 1000;
    for (int h = 0; h < NH; h++)
        if (pt_lheap_init(&F.w[h], wake, NULL) != 0)
            fail("init of heap %d", h);
    for (int i = 0; i < NT; i++) {
        F.ctx[i].idx = i;
        pt_lheap_timer_init(&F.t[i], cb, &F.ctx[i]);
    }
    for (F.op = 0; F.n && F.op < MAX_OPS; F.op++) {
        uint8_t code = take();
        int h = take() % NH, i = take() % NT;
        switch (code % 11) {
        case 0: {
            pt_nanos when = gen_when(), period = gen_period();
            op_arm(0, h, i, when, period, 0);
            break;
        }
        case 1:
        case 2: {
            int got =
                code % 11 == 1 ? pt_lheap_timer_stop(&F.t[i]) : pt_lheap_timer_stop_sync(&F.t[i]);
            EXPECT(got == F.ref[i].armed, "stop of timer %d returned %d, want %d", i, got,
                   F.ref[i].armed);
            F.ref[i].armed = false;
            break;
        }
        case 3:
            op_arm(1, h, i, gen_when(), 0, 0);
            break;
        case 4: {
            pt_nanos when = gen_when(), period = gen_period();
            op_arm(2, h, i, when, period, take());
            break;
        }
        case 5: {
            int src = i % NH, got = pt_lheap_move(&F.w[h], &F.w[src]);
            EXPECT(got == (h == src ? -EINVAL : 0), "move %d -> %d returned %d", src, h, got);
            if (h != src)
                EXPECT(pt_lheap_len(&F.w[src]) == 0 && pt_lheap_zombies(&F.w[src]) == 0,
                       "heap %d not empty after its move", src);
            break;
        }
        case 6:
        case 7: {
            uint8_t b = take();
            switch (b & 3) {
            case 0:
                break;
            case 1:
                F.now = sat_add(F.now, b >> 2);
                break;
            case 2:
                F.now = sat_add(F.now, gen_span());
                break;
            default:
                F.now = INT64_MAX - (b >> 2);
                break;
            }
            op_check();
            break;
        }
        case 8: { /* what timer i's callback does next time */
            uint8_t b = take();
            F.ctx[i].action = (enum action)(b % ACT_COUNT);
            F.ctx[i].reset_heap = h;
            F.ctx[i].reset_in = (b >> 2) & 1 ? -1 : (b >> 3) & 1 ? 0 : gen_span();
            break;
        }
        case 9: {
            bool busy = pt_lheap_len(&F.w[h]) > 0;
            int got = pt_lheap_destroy(&F.w[h]);
            EXPECT(got == (busy ? -EBUSY : 0), "destroy of heap %d returned %d", h, got);
            if (!busy && pt_lheap_init(&F.w[h], wake, NULL) != 0)
                fail("init of heap %d again", h);
            break;
        }
        default:
            break; /* a no-op: more room for the mutator */
        }
        check_all();
    }
    for (int i = 0; i < NT; i++) {
        int got = pt_lheap_timer_stop_sync(&F.t[i]);
        EXPECT(got == F.ref[i].armed, "final stop_sync of timer %d returned %d", i, got);
        F.ref[i].armed = false;
    }
    for (int h = 0; h < NH; h++)
        EXPECT(pt_lheap_destroy(&F.w[h]) == 0, "final destroy of heap %d", h);
    return 0;
}
