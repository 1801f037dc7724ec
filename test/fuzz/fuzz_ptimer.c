/* Differential fuzzing of the per-P timers: the input is decoded into
 * operations on NH heaps and NT timers (start, stop, reset, modify, move,
 * check at a time, stop_sync, next, destroy, an injected allocation
 * failure, and what each timer's callback does to its own timer), run
 * against ptimer and against ref_timers.h, and after every operation the
 * two must agree:
 *  - every return value (start/stop/reset/modify/stop_sync/check/destroy/
 *    move), and -ENOMEM only from an operation that allocates, with a
 *    failure injected, and then nothing changed;
 *  - which timers fire in each check, how often, with which seq, in
 *    non-decreasing order of their times, and what the callbacks' own
 *    calls return;
 *  - each timer's status class (ptimer.h's table: armed is Waiting or
 *    ModifiedXX, stopped is Deleted or Removed, ...);
 *  - pt_timers_next and poll_until: 0 only with nothing armed, otherwise
 *    at or before the earliest armed time (a lower bound: see ptimer.h);
 *  - pt_timers_verify(quiescent) on every heap;
 *  - at the end, after stop_sync of every timer, every heap destroys and
 *    every block the library allocated is freed.
 * The last heap is staged (pt_timers_set_staging): its ring must change
 * none of the above.
 * Any disagreement aborts with a message (libFuzzer then saves the input).
 *
 * Built two ways: as a libFuzzer target (scripts/verify.sh, clang) and,
 * with PT_FUZZ_ENTRY renamed, into test/verify's replay test, which runs
 * the seed corpus and every saved crash input under the normal build. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "fuzz_fail.h"
#include "ptimer/ptimer.h"
#include "ref_timers.h"

#ifndef PT_FUZZ_ENTRY
#define PT_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

#define NH 3
#define NT 6
#define MAX_OPS 400
#define MAX_FIRES 64 /* per check */

enum action { ACT_NONE, ACT_STOP, ACT_RESET, ACT_STOP_SYNC, ACT_COUNT };

struct ctx {
    int idx;
    enum action action; /* done once, by the next callback, then cleared */
    int reset_heap;     /* ACT_RESET: the heap passed */
    pt_nanos reset_in;  /* ACT_RESET: when = now + reset_in (negative: never) */
};

struct fire {
    int t;
    uintptr_t seq;
    int act_ret; /* what the callback's own call returned; 0 for none */
};

static struct {
    const uint8_t *p;
    size_t n;
    pt_timers ts[NH];
    pt_timer t[NT];
    struct ctx ctx[NT];
    struct ref_timer ref[NT];
    pt_nanos now;
    int checking; /* the heap being checked, -1 outside checks */
    struct fire log[MAX_FIRES];
    int nlog;
    size_t op; /* for messages */
} F;

#define fail(...) fuzz_fail("fuzz_ptimer", F.op, __VA_ARGS__)

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fail(__VA_ARGS__);                                                                     \
    } while (0)

static pt_nanos sat_add(pt_nanos a, pt_nanos b)
{
    pt_nanos r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static uint8_t take(void)
{
    if (!F.n)
        return 0;
    F.n--;
    return *F.p++;
}

static pt_nanos gen_when(void)
{
    uint8_t b = take();
    switch (b & 7) {
    case 0:
        return 0;
    case 1:
        return -1 - (b >> 3);
    case 2:
        return sat_add(F.now, b >> 3);
    case 3:
        return F.now - (b >> 3);
    case 4:
        return INT64_MAX - (b >> 3);
    case 5:
        return sat_add(F.now, (pt_nanos)take() * 1000);
    case 6:
        return INT64_MAX;
    default: {
        pt_nanos hi = take();
        return sat_add(F.now, hi << 8 | take());
    }
    }
}

static pt_nanos gen_period(void)
{
    uint8_t b = take();
    switch (b & 7) {
    case 0:
    case 1:
    case 2:
        return 0;
    case 3:
        return 1 + (b >> 3);
    case 4:
        return (pt_nanos)take() * 100;
    case 5:
        return INT64_MAX / 2 + take();
    case 6:
        return -1 - (b >> 3); /* -EINVAL */
    default:
        return 7 + (pt_nanos)(b >> 3) * 13;
    }
}

static const char *status_class_ok(enum pt_timer_status s, enum ref_state r)
{
    switch (r) {
    case REF_IDLE:
        return s == PT_TIMER_NOSTATUS ? NULL : "NoStatus";
    case REF_ARMED:
        return s == PT_TIMER_WAITING || s == PT_TIMER_MODIFIED_EARLIER ||
                       s == PT_TIMER_MODIFIED_LATER
                   ? NULL
                   : "Waiting or ModifiedXX";
    case REF_STOPPED:
        return s == PT_TIMER_DELETED || s == PT_TIMER_REMOVED ? NULL : "Deleted or Removed";
    case REF_REMOVED:
        return s == PT_TIMER_REMOVED ? NULL : "Removed";
    }
    return "?";
}

/* Learn what the implementation chose for stopped timers: a Removed one is
 * in no heap from now on (and can never go back to Deleted unarmed). */
static void observe(void)
{
    for (int i = 0; i < NT; i++) {
        enum pt_timer_status s = pt_timer_status(&F.t[i]);
        const char *want = status_class_ok(s, F.ref[i].state);
        EXPECT(!want, "timer %d: status %d, reference wants %s", i, s, want);
        if (F.ref[i].state == REF_STOPPED && s == PT_TIMER_REMOVED)
            F.ref[i].state = REF_REMOVED;
    }
}

static void verify_all(void)
{
    observe();
    for (int h = 0; h < NH; h++) {
        EXPECT(pt_timers_verify(&F.ts[h], true) == 0, "heap %d fails pt_timers_verify", h);
        int armed = 0;
        pt_nanos first = 0;
        for (int i = 0; i < NT; i++)
            if (F.ref[i].state == REF_ARMED && F.ref[i].heap == h) {
                armed++;
                if (!first || F.ref[i].when < first)
                    first = F.ref[i].when;
            }
        EXPECT(pt_timers_len(&F.ts[h]) >= (size_t)armed, "heap %d: len %zu < %d armed", h,
               pt_timers_len(&F.ts[h]), armed);
        pt_nanos next = pt_timers_next(&F.ts[h]);
        if (!armed)
            continue;
        EXPECT(next != 0 && next <= first, "heap %d: next %lld, but a timer is armed at %lld", h,
               (long long)next, (long long)first);
    }
}

/* The time timer i's callback resets it to. A ticker is never reset to a
 * time already due: it would be ModifiedEarlier behind a head not yet due,
 * and run at the next check rather than this one (a check runs what is due
 * when it looks at it; poll_until then says to look again at once). */
static pt_nanos reset_when(int i)
{
    pt_nanos d = F.ctx[i].reset_in;
    if (d < 0)
        return -1;
    if (d == 0 && F.ref[i].period > 0)
        d = 1;
    return sat_add(F.now, d);
}

static void cb(void *arg, uintptr_t seq)
{
    struct ctx *c = arg;
    EXPECT(F.checking >= 0, "timer %d fired outside a check", c->idx);
    EXPECT(F.nlog < MAX_FIRES, "more than %d firings in one check", MAX_FIRES);
    struct fire *f = &F.log[F.nlog++];
    f->t = c->idx;
    f->seq = seq;
    f->act_ret = 0;
    enum action a = c->action;
    c->action = ACT_NONE;
    pt_timer *t = &F.t[c->idx];
    switch (a) {
    case ACT_STOP:
        f->act_ret = pt_timer_stop(t);
        break;
    case ACT_STOP_SYNC:
        f->act_ret = pt_timer_stop_sync(t);
        break;
    case ACT_RESET:
        f->act_ret = pt_timer_reset(&F.ts[c->reset_heap], t, reset_when(c->idx));
        break;
    default:
        break;
    }
}

static void wake(void *ctx, pt_nanos when)
{
    (void)ctx;
    EXPECT(when > 0, "wake with when %lld", (long long)when);
}

/* The reference's side of a check of heap h: every armed timer of h due at
 * now runs, as often as it comes due again (a one-shot reset from its own
 * callback to a time already due runs again in the same check). Matches
 * the library's log per timer, in order. */
static int ref_check(int h, struct ctx *ctx)
{
    int fired = 0, cursor[NT] = {0};
    bool again = true;
    while (again) {
        again = false;
        for (int i = 0; i < NT; i++) {
            struct ref_timer *r = &F.ref[i];
            if (r->heap != h || !ref_due(r, F.now))
                continue;
            again = true;
            fired++;
            /* the library's next firing of i */
            int k = cursor[i], seen = 0, j;
            for (j = 0; j < F.nlog; j++)
                if (F.log[j].t == i && seen++ == k)
                    break;
            EXPECT(j < F.nlog, "check of heap %d at %lld: timer %d (when %lld) did not fire", h,
                   (long long)F.now, i, (long long)r->when);
            cursor[i]++;
            EXPECT(F.log[j].seq == r->seq, "timer %d fired with seq %lu, want %lu", i,
                   (unsigned long)F.log[j].seq, (unsigned long)r->seq);
            if (r->period > 0)
                r->when = ref_next_tick(r->when, r->period, F.now);
            else
                r->state = REF_IDLE;
            /* its callback's own call, which the library made then */
            struct ctx *c = &ctx[i];
            int want = 0;
            switch (c->action) {
            case ACT_STOP:
                want = ref_stop(r);
                break;
            case ACT_STOP_SYNC:
                want = ref_stop(r);
                if (r->state == REF_STOPPED)
                    r->state = REF_REMOVED;
                break;
            case ACT_RESET:
                if (F.log[j].act_ret == -ENOMEM)
                    want = -ENOMEM; /* an injected failure: nothing changed */
                else
                    want = ref_arm(r, c->reset_heap, reset_when(i));
                break;
            default:
                break;
            }
            c->action = ACT_NONE;
            EXPECT(F.log[j].act_ret == want, "timer %d's callback call returned %d, want %d", i,
                   F.log[j].act_ret, want);
        }
        /* round again: a one-shot reset from its callback to a time already
         * due runs again in the same check (a ticker is re-keyed past now) */
    }
    for (int i = 0; i < NT; i++) {
        int n = 0;
        for (int j = 0; j < F.nlog; j++)
            n += F.log[j].t == i;
        EXPECT(n == cursor[i], "timer %d fired %d times in a check of heap %d, want %d", i, n, h,
               cursor[i]);
    }
    return fired;
}

static void op_check(int h, bool owner)
{
    struct ctx before[NT]; /* the callbacks' plans, which they use up */
    memcpy(before, F.ctx, sizeof before);
    F.checking = h;
    F.nlog = 0;
    /* first firings in the library's order: their times never go down */
    pt_nanos poll = -1;
    int ran = pt_timers_check(&F.ts[h], F.now, owner, &poll);
    F.checking = -1;
    pt_nanos last = 0;
    bool first[NT];
    memset(first, 1, sizeof first);
    for (int j = 0; j < F.nlog; j++) {
        int i = F.log[j].t;
        if (!first[i])
            continue;
        first[i] = false;
        EXPECT(F.ref[i].state == REF_ARMED && F.ref[i].heap == h,
               "timer %d fired from heap %d but is not armed there", i, h);
        EXPECT(F.ref[i].when >= last, "timer %d (when %lld) ran after one at %lld", i,
               (long long)F.ref[i].when, (long long)last);
        last = F.ref[i].when;
    }
    int want = ref_check(h, before);
    EXPECT(ran == want, "check of heap %d at %lld ran %d, want %d", h, (long long)F.now, ran, want);
    /* poll_until: a lower bound of what is armed, 0 only for nothing */
    pt_nanos first_when = 0;
    for (int i = 0; i < NT; i++)
        if (F.ref[i].state == REF_ARMED && F.ref[i].heap == h &&
            (!first_when || F.ref[i].when < first_when))
            first_when = F.ref[i].when;
    EXPECT(poll >= 0, "poll_until not stored");
    if (first_when)
        EXPECT(poll != 0 && poll <= first_when, "heap %d: poll_until %lld, armed at %lld", h,
               (long long)poll, (long long)first_when);
}

/* The reference decides what an arming needs; a library -ENOMEM is right
 * only for an arming that pushes, with a failure injected. */
static void op_arm(int kind, int h, int i, pt_nanos when, pt_nanos period, uintptr_t seq,
                   bool injected)
{
    pt_timer *t = &F.t[i];
    struct ref_timer *r = &F.ref[i];
    int got;
    if (kind == 0)
        got = pt_timer_start(&F.ts[h], t, when, period);
    else if (kind == 1)
        got = pt_timer_reset(&F.ts[h], t, when);
    else
        got = pt_timer_modify(&F.ts[h], t, when, period, cb, &F.ctx[i], seq);
    if ((kind == 0 || kind == 2) && period < 0) {
        EXPECT(got == -EINVAL, "arm with period %lld returned %d", (long long)period, got);
        return;
    }
    if (kind == 0 && r->state == REF_ARMED) {
        EXPECT(got == -EBUSY, "start of a pending timer returned %d", got);
        return;
    }
    if (got == -ENOMEM) {
        EXPECT(injected && !ref_in_heap(r) && !pt__alloc_fail_armed(),
               "timer %d: -ENOMEM from an arming that needs no allocation", i);
        return;
    }
    int pending = ref_arm(r, h, when);
    if (kind != 1)
        r->period = period;
    if (kind == 2)
        r->seq = seq;
    int want = kind == 0 ? 0 : pending;
    EXPECT(got == want, "arm kind %d of timer %d returned %d, want %d", kind, i, got, want);
}

/* The last heap has a staging ring of 1 us slots (the least there is), so
 * the fuzzer's times, a few to 65 us ahead, land in the heap, in the ring
 * and past it; the reference knows no ring: the ring must not show. */
static void heap_init(int h)
{
    pt_timers_init(&F.ts[h], wake, NULL);
    if (h == NH - 1 && pt_timers_set_staging(&F.ts[h], 1024) != 0)
        fail("set_staging of heap %d failed", h);
}

int PT_FUZZ_ENTRY(const uint8_t *data, size_t size);
int PT_FUZZ_ENTRY(const uint8_t *data, size_t size)
{
    long live0 = pt__alloc_live();
    memset(&F, 0, sizeof F);
    F.p = data;
    F.n = size;
    F.now = 1000;
    F.checking = -1;
    for (int h = 0; h < NH; h++)
        heap_init(h);
    for (int i = 0; i < NT; i++) {
        F.ctx[i].idx = i;
        pt_timer_init(&F.t[i], cb, &F.ctx[i]);
        F.ref[i].state = REF_IDLE;
    }

    for (F.op = 0; F.n && F.op < MAX_OPS; F.op++) {
        uint8_t code = take();
        bool injected = false;
        if (code >= 0xf0) { /* an allocation failure for the next operation */
            pt__alloc_fail_after(code & 3);
            injected = true;
            code = take();
        }
        int h = take() % NH, i = take() % NT;
        switch (code % 12) {
        case 0: {
            pt_nanos when = gen_when(), period = gen_period();
            op_arm(0, h, i, when, period, 0, injected);
            break;
        }
        case 1: {
            int got = pt_timer_stop(&F.t[i]);
            int want = ref_stop(&F.ref[i]);
            EXPECT(got == want, "stop of timer %d returned %d, want %d", i, got, want);
            break;
        }
        case 2:
            op_arm(1, h, i, gen_when(), 0, 0, injected);
            break;
        case 3: {
            pt_nanos when = gen_when(), period = gen_period();
            op_arm(2, h, i, when, period, take(), injected);
            break;
        }
        case 4: {
            int src = i % NH, got = pt_timers_move(&F.ts[h], &F.ts[src]);
            if (got == -ENOMEM) {
                EXPECT(injected && h != src && !pt__alloc_fail_armed(),
                       "move: -ENOMEM with no failure injected");
                break;
            }
            EXPECT(got == 0, "move returned %d", got);
            if (h == src)
                break;
            for (int k = 0; k < NT; k++) {
                struct ref_timer *r = &F.ref[k];
                if (r->heap != src)
                    continue;
                if (r->state == REF_ARMED)
                    r->heap = h;
                else if (r->state == REF_STOPPED)
                    r->state = REF_REMOVED; /* dropped */
            }
            break;
        }
        case 5:
        case 6: {
            uint8_t b = take();
            switch (b & 3) {
            case 0:
                break;
            case 1:
                F.now = sat_add(F.now, b >> 2);
                break;
            case 2:
                F.now = sat_add(F.now, (pt_nanos)take() * 100);
                break;
            default:
                F.now = INT64_MAX;
                break;
            }
            op_check(h, !(b & 4));
            break;
        }
        case 7: {
            int got = pt_timer_stop_sync(&F.t[i]);
            struct ref_timer *r = &F.ref[i];
            int want = ref_stop(r);
            if (r->state == REF_STOPPED)
                r->state = REF_REMOVED;
            EXPECT(got == want, "stop_sync of timer %d returned %d, want %d", i, got, want);
            break;
        }
        case 8: { /* what timer i's next callback does */
            uint8_t b = take();
            struct ctx *c = &F.ctx[i];
            c->action = (enum action)(b % ACT_COUNT);
            c->reset_heap = h;
            c->reset_in = (b >> 2) == 63 ? -1 : (b >> 2);
            break;
        }
        case 9: {
            int got = pt_timers_destroy(&F.ts[h]);
            bool busy = false;
            for (int k = 0; k < NT; k++) {
                struct ref_timer *r = &F.ref[k];
                if (r->heap != h)
                    continue;
                busy |= r->state == REF_ARMED;
                if (r->state == REF_STOPPED)
                    r->state = REF_REMOVED; /* destroy unlinks stopped timers */
            }
            EXPECT(got == (busy ? -EBUSY : 0), "destroy of heap %d returned %d, busy %d", h, got,
                   busy);
            if (!got) {
                pt__alloc_fail_after(-1); /* the injected failure was destroy's */
                heap_init(h);
            }
            break;
        }
        default: { /* pt_timers_next and a non-owner check */
            verify_all();
            break;
        }
        }
        pt__alloc_fail_after(-1);
        verify_all();
    }

    for (int i = 0; i < NT; i++) {
        int got = pt_timer_stop_sync(&F.t[i]);
        EXPECT(got == ref_stop(&F.ref[i]), "final stop_sync of timer %d returned %d", i, got);
        enum pt_timer_status s = pt_timer_status(&F.t[i]);
        EXPECT(s == PT_TIMER_NOSTATUS || s == PT_TIMER_REMOVED,
               "timer %d: status %d after stop_sync", i, s);
    }
    for (int h = 0; h < NH; h++) {
        EXPECT(pt_timers_len(&F.ts[h]) == 0, "heap %d holds %zu after every stop_sync", h,
               pt_timers_len(&F.ts[h]));
        EXPECT(pt_timers_destroy(&F.ts[h]) == 0, "heap %d does not destroy", h);
    }
    EXPECT(pt__alloc_live() == live0, "%ld blocks leaked", pt__alloc_live() - live0);
    return 0;
}
