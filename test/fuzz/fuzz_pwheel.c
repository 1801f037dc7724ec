/* Differential fuzzing of the timing wheels: the input is decoded into
 * operations on NW wheels (of three different ticks) and NT timers
 * (start, stop, reset, modify, stop_sync, move, check at a time, destroy,
 * and what each timer's callback does to its own timer), run against
 * pwheel and against ref_wheel.h, and after every operation the two must
 * agree:
 *  - every return value;
 *  - which timers fire in each check: exactly those armed on the wheel
 *    with when <= now, once each, with their seq, never early, and what
 *    the callbacks' own calls return;
 *  - each timer's status;
 *  - pt_wheel_next and poll_until as lower bounds of the earliest armed
 *    time, nonzero while one is armed; with nothing armed poll_until is 0
 *    or a stale bound after now;
 *  - pt_wheel_verify and pt_wheel_len on every wheel;
 *  - at the end, after stop_sync of every timer, every wheel destroys.
 * Times span nanoseconds to centuries, so every level, the far list and
 * never are reached. Any disagreement aborts with a message.
 *
 * Built two ways: as a libFuzzer target (scripts/verify.sh, clang) and,
 * with PT_FUZZ_ENTRY renamed, into test/verify's replay test. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_fail.h"
#include "ptimer/pwheel.h"
#include "ref_wheel.h"

#ifndef PT_FUZZ_ENTRY
#define PT_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

#define NW 3
#define NT 8
#define MAX_OPS 400

enum action { ACT_NONE, ACT_STOP, ACT_RESET, ACT_STOP_SYNC, ACT_COUNT };

struct ctx {
    int idx;
    enum action action; /* done by the next callback, then cleared */
    int reset_wheel;
    pt_nanos reset_in; /* ACT_RESET: when = now + reset_in (negative: never) */
};

static struct {
    const uint8_t *p;
    size_t n;
    pt_wheel w[NW];
    pt_wheel_timer t[NT];
    struct ctx ctx[NT];
    struct ref_wtimer ref[NT];
    pt_nanos now;
    int checking; /* the wheel being checked, -1 outside checks */
    bool due[NT]; /* what the reference says this check must run */
    int fired[NT];
    size_t op;
} F;

#define fail(...) fuzz_fail("fuzz_pwheel", F.op, __VA_ARGS__)
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
    for (int i = 0; i < NT; i++) {
        enum pt_wheel_timer_status s = pt_wheel_timer_status(&F.t[i]);
        enum pt_wheel_timer_status want = F.ref[i].armed ? PT_WHEEL_PENDING : PT_WHEEL_IDLE;
        EXPECT(s == want, "timer %d: status %d, reference %d", i, s, want);
        if (F.ref[i].armed)
            EXPECT(F.t[i].when == F.ref[i].when, "timer %d: when %lld, reference %lld", i,
                   (long long)F.t[i].when, (long long)F.ref[i].when);
    }
    for (int h = 0; h < NW; h++) {
        EXPECT(pt_wheel_verify(&F.w[h], true) == 0, "wheel %d: %s", h, pt_wheel_verify_report());
        size_t armed = 0;
        pt_nanos first = 0;
        for (int i = 0; i < NT; i++) {
            if (!F.ref[i].armed || F.ref[i].wheel != h)
                continue;
            armed++;
            if (F.ref[i].when != PT_MAXWHEN && (!first || F.ref[i].when < first))
                first = F.ref[i].when;
        }
        EXPECT(pt_wheel_len(&F.w[h]) == armed, "wheel %d: len %zu, reference %zu", h,
               pt_wheel_len(&F.w[h]), armed);
        pt_nanos next = pt_wheel_next(&F.w[h]);
        if (first)
            EXPECT(next != 0 && next <= first, "wheel %d: next %lld, a timer is armed at %lld", h,
                   (long long)next, (long long)first);
    }
}

/* reference: arm timer i at when (fields already set) on wheel h */
static void ref_arm(int i, int h, pt_nanos when)
{
    F.ref[i].armed = true;
    F.ref[i].wheel = h;
    F.ref[i].when = ref_wnorm(when);
}

static void cb(void *arg, uintptr_t seq)
{
    struct ctx *c = arg;
    int i = c->idx;
    struct ref_wtimer *r = &F.ref[i];
    EXPECT(F.checking >= 0, "timer %d fired outside a check", i);
    EXPECT(F.due[i], "timer %d fired, not due (when %lld, now %lld)", i, (long long)r->when,
           (long long)F.now);
    EXPECT(F.fired[i] == 0, "timer %d fired twice in one check", i);
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
    EXPECT(pt_wheel_timer_status(&F.t[i]) == (r->period > 0 ? PT_WHEEL_PENDING : PT_WHEEL_RUNNING),
           "timer %d: status %d in its callback", i, pt_wheel_timer_status(&F.t[i]));
    enum action a = c->action;
    c->action = ACT_NONE;
    int got, want;
    switch (a) {
    case ACT_STOP:
    case ACT_STOP_SYNC:
        got = a == ACT_STOP ? pt_wheel_timer_stop(&F.t[i]) : pt_wheel_timer_stop_sync(&F.t[i]);
        want = r->armed;
        r->armed = false;
        if (a == ACT_STOP_SYNC)
            r->running = false; /* released */
        EXPECT(got == want, "timer %d: stop from its callback %d, want %d", i, got, want);
        break;
    case ACT_RESET: {
        pt_nanos when = c->reset_in < 0 ? -1 : sat_add(F.now, c->reset_in);
        got = pt_wheel_timer_reset(&F.w[c->reset_wheel], &F.t[i], when);
        want = r->armed;
        ref_arm(i, ref_wheel_for(r, c->reset_wheel), when);
        EXPECT(got == want, "timer %d: reset from its callback %d, want %d", i, got, want);
        break;
    }
    default:
        break;
    }
}

static void op_check(int h)
{
    int want = 0;
    for (int i = 0; i < NT; i++) {
        struct ref_wtimer *r = &F.ref[i];
        F.due[i] = r->armed && r->wheel == h && r->when != PT_MAXWHEN && r->when <= F.now;
        F.fired[i] = 0;
        want += F.due[i];
    }
    F.checking = h;
    pt_nanos poll_until = -7;
    int got = pt_wheel_check(&F.w[h], F.now, &poll_until);
    F.checking = -1;
    for (int i = 0; i < NT; i++) {
        EXPECT(F.fired[i] == (int)F.due[i],
               "timer %d: fired %d times, due %d (when %lld, now %lld)", i, F.fired[i], F.due[i],
               (long long)F.ref[i].when, (long long)F.now);
        F.ref[i].running = false; /* every callback has returned */
    }
    EXPECT(got == want, "check of wheel %d ran %d, want %d", h, got, want);
    pt_nanos first = 0;
    for (int i = 0; i < NT; i++) {
        struct ref_wtimer *r = &F.ref[i];
        if (r->armed && r->wheel == h && r->when != PT_MAXWHEN && (!first || r->when < first))
            first = r->when;
    }
    /* Nothing armed: 0, or a stale bound left by a stop, after now (a
     * check that looked under the lock made it exact). */
    EXPECT(first ? poll_until != 0 && poll_until <= first : poll_until == 0 || poll_until > F.now,
           "wheel %d: poll_until %lld, earliest armed %lld", h, (long long)poll_until,
           (long long)first);
}

static void op_arm(int kind, int h, int i, pt_nanos when, pt_nanos period, uintptr_t seq)
{
    struct ref_wtimer *r = &F.ref[i];
    int got = kind == 0 ? pt_wheel_timer_start(&F.w[h], &F.t[i], when, period)
              : kind == 1
                  ? pt_wheel_timer_reset(&F.w[h], &F.t[i], when)
                  : pt_wheel_timer_modify(&F.w[h], &F.t[i], when, period, cb, &F.ctx[i], seq);
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
        ref_arm(i, ref_wheel_for(r, h), when);
    }
    EXPECT(got == want, "%s of timer %d on wheel %d returned %d, want %d",
           kind == 0   ? "start"
           : kind == 1 ? "reset"
                       : "modify",
           i, h, got, want);
}

int PT_FUZZ_ENTRY(const uint8_t *data, size_t size);
int PT_FUZZ_ENTRY(const uint8_t *data, size_t size)
{
    static const pt_nanos ticks[NW] = {(pt_nanos)1 << 10, 0, (pt_nanos)1 << 20};
    memset(&F, 0, sizeof F);
    F.p = data;
    F.n = size;
    F.now = 1000;
    F.checking = -1;
    for (int h = 0; h < NW; h++)
        if (pt_wheel_init(&F.w[h], ticks[h], wake, NULL) != 0)
            fail("init of wheel %d", h);
    for (int i = 0; i < NT; i++) {
        F.ctx[i].idx = i;
        pt_wheel_timer_init(&F.t[i], cb, &F.ctx[i]);
    }
    for (F.op = 0; F.n && F.op < MAX_OPS; F.op++) {
        uint8_t code = take();
        int h = take() % NW, i = take() % NT;
        switch (code % 11) {
        case 0: {
            pt_nanos when = gen_when(), period = gen_period();
            op_arm(0, h, i, when, period, 0);
            break;
        }
        case 1:
        case 2: {
            int got =
                code % 11 == 1 ? pt_wheel_timer_stop(&F.t[i]) : pt_wheel_timer_stop_sync(&F.t[i]);
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
            int src = i % NW, got = pt_wheel_move(&F.w[h], &F.w[src]);
            EXPECT(got == (h == src ? -EINVAL : 0), "move %d -> %d returned %d", src, h, got);
            if (h != src)
                for (int k = 0; k < NT; k++)
                    if (F.ref[k].armed && F.ref[k].wheel == src)
                        F.ref[k].wheel = h;
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
            op_check(h);
            break;
        }
        case 8: { /* what timer i's callback does next time */
            uint8_t b = take();
            F.ctx[i].action = (enum action)(b % ACT_COUNT);
            F.ctx[i].reset_wheel = h;
            F.ctx[i].reset_in = (b >> 2) & 1 ? -1 : (b >> 3) & 1 ? 0 : gen_span();
            break;
        }
        case 9: {
            bool busy = false;
            for (int k = 0; k < NT; k++)
                busy |= F.ref[k].armed && F.ref[k].wheel == h;
            int got = pt_wheel_destroy(&F.w[h]);
            EXPECT(got == (busy ? -EBUSY : 0), "destroy of wheel %d returned %d", h, got);
            if (!busy && pt_wheel_init(&F.w[h], ticks[h], wake, NULL) != 0)
                fail("init of wheel %d again", h);
            break;
        }
        default:
            break; /* a no-op: more room for the mutator */
        }
        check_all();
    }
    for (int i = 0; i < NT; i++) {
        int got = pt_wheel_timer_stop_sync(&F.t[i]);
        EXPECT(got == F.ref[i].armed, "final stop_sync of timer %d returned %d", i, got);
        F.ref[i].armed = false;
    }
    for (int h = 0; h < NW; h++)
        EXPECT(pt_wheel_destroy(&F.w[h]) == 0, "final destroy of wheel %d", h);
    return 0;
}
