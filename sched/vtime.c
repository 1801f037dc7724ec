/* Virtual time: the scheduler's clock when opt.virtual_time asks for it
 * (Go 1.25's testing/synctest bubble, for a whole scheduler).
 *
 * The clock moves in one place: an idle M (proc.c's find_runnable, with
 * nothing left to run) that finds every G durably blocked (vtime.h's
 * count) jumps it to the earliest timer pending on any P or on the
 * scheduler's driven TimerThread, and goes back to run what fell due.
 * Every run of due timers takes the jump's lock, and reads the clock
 * under it: a jump never overtakes a timer whose callback has taken it
 * out of its heap but not yet readied its G (the count would still say
 * "blocked", the heap "nothing before the next"), and a callback sees
 * the time it was due at.
 *
 * The same look readies a G waiting in pt_sched_settle instead, when it
 * is the only G not durably blocked; and with no timer left and no
 * settler, every G is blocked for good: the deadlock, reported once. */
#define _GNU_SOURCE /* dladdr, open_memstream */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/futex.h"
#include "base/lock.h"
#include "sched/internal.h"

int pt__vt_init(pt_sched *s)
{
    atomic_init(&s->vt.now, PT_VIRTUAL_EPOCH);
    pt__lock_init(&s->vt.lock);
    atomic_init(&s->vt.blocked, 0);
    atomic_init(&s->vt.settler, NULL);
    atomic_init(&s->vt.deadlocked, 0);
    s->vt.report = NULL;
    /* a TimerThread whose tasks the Ms run at the virtual now: the
     * engine of PT_TIMERS_TIMERTHREAD, and in the per-P modes the one for
     * timers armed from threads that are not the scheduler's */
    return pt_timerthread_create_driven(&s->tt, NULL);
}

void pt__vt_fini(pt_sched *s)
{
    pt_timerthread_destroy(s->tt);
    s->tt = NULL;
    free(s->vt.report);
    s->vt.report = NULL;
}

void pt__vt_block(pt_sched *s)
{
    /* seq_cst, with the idle M's loads: see pt__vt_idle */
    atomic_fetch_add_explicit(&s->vt.blocked, 1, memory_order_seq_cst);
}

void pt__vt_unblock(pt_sched *s)
{
    atomic_fetch_sub_explicit(&s->vt.blocked, 1, memory_order_seq_cst);
}

pt_nanos pt_time_now(void)
{
    struct pt__m *m = pt__cur_m();
    return pt__now(m ? m->s : NULL);
}

/* ---- the deadlock report ----------------------------------------------- */

static const char *const wait_names[] = {
    [PT__WAIT_NONE] = "runnable",
    [PT__WAIT_PARK] = "pt_park, commit",
    [PT__WAIT_SLEEP] = "sleep",
    [PT__WAIT_CHAN_SEND] = "chan send",
    [PT__WAIT_CHAN_RECV] = "chan receive",
    [PT__WAIT_SELECT] = "select, cases",
    [PT__WAIT_WG] = "wait group",
    [PT__WAIT_FD] = "fd",
    [PT__WAIT_RING] = "io_uring request, fd",
    [PT__WAIT_SETTLE] = "settle",
};

/* "name+0xoff in object" for an address, as far as dladdr knows it. */
static void where(FILE *f, const void *a)
{
    Dl_info d;
    if (a && dladdr(a, &d) && d.dli_fname) {
        if (d.dli_sname)
            fprintf(f, "%s+0x%zx", d.dli_sname, (size_t)((const char *)a - (const char *)d.dli_saddr));
        else
            fprintf(f, "%p", a);
        fprintf(f, " in %s (+0x%zx)", d.dli_fname,
                (size_t)((const char *)a - (const char *)d.dli_fbase));
    } else {
        fprintf(f, "%p", a);
    }
}

struct report_walk {
    pt_sched *s;
    FILE *f;
};

static void report_g(void *lo, void *arg)
{
    struct report_walk *w = arg;
    pt_g *g = pt__g_on_stack(lo, w->s->stacks.size);
    uint32_t st = g ? atomic_load_explicit(&g->status, memory_order_acquire) : PT__G_IDLE;
    if (!g || st == PT__G_IDLE || st == PT__G_DEAD)
        return; /* a pooled or finished G's stack */
    const char *what = g->wait < sizeof wait_names / sizeof wait_names[0] && wait_names[g->wait]
                           ? wait_names[g->wait]
                           : "?";
    fprintf(w->f, "G %llu [%s", (unsigned long long)g->id, st == PT__G_WAITING ? what : "runnable");
    if (st == PT__G_WAITING && g->wait_on)
        fprintf(w->f, " %p", g->wait_on);
    if (st == PT__G_WAITING && g->park.deadline)
        fprintf(w->f, ", deadline %lld", (long long)g->park.deadline);
    fprintf(w->f, "%s]: runs ", st == PT__G_WAITING && !g->wait_durable ? ", not durable" : "");
    where(w->f, (const void *)(uintptr_t)g->fn);
    fprintf(w->f, "\n    made at ");
    where(w->f, g->made_at);
    if (g->made_by)
        fprintf(w->f, " by G %llu", (unsigned long long)g->made_by);
    else
        fprintf(w->f, " by a thread");
    fputc('\n', w->f);
}

/* The report: a line about the whole, then every G. NULL without memory. */
static char *report(pt_sched *s, int64_t gs)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fprintf(f,
            "ptimer sched %p: deadlock: all %lld Gs are durably blocked and no timer is "
            "pending, at virtual time %lld (epoch + %lld ns)\n",
            (void *)s, (long long)gs, (long long)pt__now(s),
            (long long)(pt__now(s) - PT_VIRTUAL_EPOCH));
    struct report_walk w = {s, f};
    pt__stack_each(&s->stacks, report_g, &w);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---- the idle M's look ------------------------------------------------- */

static bool deadlock(pt_sched *s, int64_t gs)
{
    s->vt.report = report(s, gs);
    atomic_store_explicit(&s->vt.deadlocked, 1, memory_order_release);
    pt__unlock(&s->vt.lock);
    if (s->opt.on_deadlock)
        s->opt.on_deadlock(s->vt.report ? s->vt.report : "ptimer sched: deadlock (no memory "
                                                          "for the report)\n",
                           s->opt.on_deadlock_arg);
    atomic_fetch_add_explicit(&s->gdone_word, 1, memory_order_release);
    pt__futex_wake(&s->gdone_word, INT_MAX);
    return false;
}

bool pt__vt_idle(struct pt__m *m)
{
    pt_sched *s = m->s;
    if (atomic_load_explicit(&s->vt.deadlocked, memory_order_acquire))
        return false;
    /* the look below, first without the lock: most find a G running */
    if (atomic_load_explicit(&s->gcount, memory_order_seq_cst) -
            atomic_load_explicit(&s->vt.blocked, memory_order_seq_cst) >
        1)
        return false;
    pt__lock(&s->vt.lock);
    /* seq_cst, as the count's updates: a G counted blocked here was
     * counted after its commit published it, so its waker, if any, is
     * an other G (then not blocked, or counted later) or a timer (then
     * in a heap, or run under the lock this M holds). */
    int64_t gs = atomic_load_explicit(&s->gcount, memory_order_seq_cst);
    int64_t blocked = atomic_load_explicit(&s->vt.blocked, memory_order_seq_cst);
    pt_g *settler = atomic_load_explicit(&s->vt.settler, memory_order_seq_cst);
    /* deadlocked again, under the lock: another M may have found it
     * while this one waited for the lock (reported once) */
    if (gs == 0 || gs - blocked != (settler ? 1 : 0) ||
        atomic_load_explicit(&s->vt.deadlocked, memory_order_relaxed)) {
        pt__unlock(&s->vt.lock);
        return false;
    }
    if (settler) {
        /* every other G is durably blocked: the settler goes on, at the
         * same time */
        atomic_store_explicit(&s->vt.settler, NULL, memory_order_relaxed);
        pt__unlock(&s->vt.lock);
        if (pt_ready(settler) != 0)
            pt__sched_bad(settler, "settle");
        return true;
    }
    pt_nanos next = pt__earliest_timer(s);
    if (next == 0)
        return deadlock(s, gs);
    if (next > pt__now(s))
        atomic_store_explicit(&s->vt.now, next, memory_order_release);
    pt__unlock(&s->vt.lock);
    return true; /* to run what is due now */
}

/* ---- settle ------------------------------------------------------------ */

static bool settle_commit(void *arg)
{
    pt_g *g = arg;
    /* published once parked: the idle M readies it (pt_ready refuses a
     * G not yet parked) */
    atomic_store_explicit(&g->s->vt.settler, g, memory_order_seq_cst);
    /* this M looks at once, in case the others were blocked already */
    return true;
}

int pt_sched_settle(void)
{
    pt_g *g = pt_g_current();
    if (!g)
        return -EPERM;
    pt_sched *s = g->s;
    if (!s->opt.virtual_time)
        return -EINVAL;
    pt__lock(&s->vt.lock);
    bool busy = atomic_load_explicit(&s->vt.settler, memory_order_relaxed) != NULL ||
                s->vt.settling;
    s->vt.settling = !busy;
    pt__unlock(&s->vt.lock);
    if (busy)
        return -EBUSY;
    pt__g_waits(g, PT__WAIT_SETTLE, NULL, false);
    pt__park(g, settle_commit, g);
    pt__lock(&s->vt.lock);
    s->vt.settling = false;
    pt__unlock(&s->vt.lock);
    return 0;
}

const char *pt_sched_deadlock_report(pt_sched *s)
{
    if (!s || s->magic != PT__SCHED_MAGIC || !s->opt.virtual_time ||
        !atomic_load_explicit(&s->vt.deadlocked, memory_order_acquire))
        return NULL;
    return s->vt.report;
}
