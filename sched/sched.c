/* A scheduler's life: create, wait, destroy, run, set_procs, stats. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/futex.h"
#include "base/lock.h"
#include "sched/fault.h"
#include "sched/internal.h"

static inline bool sched_valid(const pt_sched *s)
{
    return s && s->magic == PT__SCHED_MAGIC;
}

/* The CPUs this process may run on, at most PT__MAX_PROCS */
static int usable_cpus(void)
{
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    if (n <= 0)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n < PT__MAX_PROCS ? n : PT__MAX_PROCS) : 1;
}

/* The services' life-cycle hooks (hooks.h), in the order they open. */
static const struct pt__service *const services[] = {
    &pt__time_service,
    &pt__fd_service,
#ifdef PT_HAVE_URING
    &pt__ring_service,
#endif
};
enum { NSERVICES = sizeof services / sizeof services[0] };

static void p_free(struct pt__p *p)
{
    for (int i = NSERVICES - 1; i >= 0; i--)
        if (services[i]->p_close)
            services[i]->p_close(p);
    pt__free_lines(p->m);
    pt__free_lines(p);
}

static int p_open_services(pt_sched *s, struct pt__p *p)
{
    for (int i = 0; i < NSERVICES; i++) {
        int err = services[i]->p_open ? services[i]->p_open(s, p) : 0;
        if (err < 0)
            return err; /* p_free closes what opened: each p_close takes a P as it is */
    }
    return 0;
}

/* P number `id` and its M, thread not started. */
static struct pt__p *p_new(pt_sched *s, int id)
{
    struct pt__p *p = pt__alloc_lines(sizeof *p);
    struct pt__m *m = pt__alloc_lines(sizeof *m);
    if (!p || !m) {
        pt__free_lines(p);
        pt__free_lines(m);
        return NULL;
    }
    memset(p, 0, sizeof *p);
    memset(m, 0, sizeof *m);
    p->id = id;
    p->s = s;
    p->m = m;
    if (pt__ptimers_init(pt__lheap(s), &p->timers, pt__wake_timers, p) != 0 ||
        pt__ptimers_set_slack(pt__lheap(s), &p->timers, s->opt.timer_slack) != 0) {
        p_free(p);
        return NULL;
    }
    m->p = p;
    m->s = s;
    m->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
    return p;
}

/* Makes Ps up to n and starts their Ms (s->lock held, or creation). */
static int grow(pt_sched *s, int n)
{
    int made = atomic_load_explicit(&s->maxprocs_made, memory_order_relaxed);
    for (int i = made; i < n; i++) {
        struct pt__p *p = p_new(s, i);
        if (!p)
            return -ENOMEM;
        int serr = p_open_services(s, p);
        if (serr < 0) {
            pt__ptimers_destroy(pt__lheap(s), &p->timers);
            p_free(p);
            return serr;
        }
        s->ps[i] = p;
        /* release: the P is complete before scanners (made_procs) see it */
        atomic_store_explicit(&s->maxprocs_made, i + 1, memory_order_release);
        int err = pthread_create(&p->m->thread, NULL, pt__m_main, p->m);
        if (err) {
            atomic_store_explicit(&s->maxprocs_made, i, memory_order_release);
            s->ps[i] = NULL;
            pt__ptimers_destroy(pt__lheap(s), &p->timers);
            p_free(p);
            return err == EAGAIN ? -EAGAIN : -err;
        }
    }
    return 0;
}

static void stop_threads(pt_sched *s)
{
    atomic_store_explicit(&s->stopping, 1, memory_order_seq_cst);
    pt__wake_all(s);
    pt__sysmon_kick(s);
    int n = atomic_load_explicit(&s->maxprocs_made, memory_order_acquire);
    for (int i = 0; i < n; i++)
        pthread_join(s->ps[i]->m->thread, NULL);
    pthread_join(s->sysmon.thread, NULL);
}

static void free_all(pt_sched *s)
{
    pt__g_free_all(s);
    pt__stack_pool_fini(&s->stacks);
    int n = atomic_load_explicit(&s->maxprocs_made, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        /* Gs gone, their timers stopped (stop_sync): only stopped entries
         * can be left, and destroy unlinks those. */
        if (pt__ptimers_destroy(pt__lheap(s), &s->ps[i]->timers) != 0) {
            fprintf(stderr, "ptimer sched: corrupt P %d: its heap holds %zu timers at destroy\n", i,
                    pt__ptimers_len(pt__lheap(s), &s->ps[i]->timers));
            abort();
        }
        p_free(s->ps[i]);
    }
    for (int i = NSERVICES - 1; i >= 0; i--)
        if (services[i]->close)
            services[i]->close(s);
    if (s->np)
        pt_netpoll_destroy(s->np);
    if (s->opt.virtual_time)
        pt__vt_fini(s);
    s->magic = 0;
    pt__free_lines(s);
}

/* PT_STACK_GUARD, when set, overrides the option: a test or a user
 * forces a stack path without rebuilding. -1 for a value it does not
 * know. */
static int stack_guard(enum pt_stack_guard opt)
{
    const char *e = getenv("PT_STACK_GUARD");
    if (!e)
        return (int)opt;
    if (strcmp(e, "auto") == 0)
        return PT_STACK_GUARD_AUTO;
    if (strcmp(e, "pages") == 0)
        return PT_STACK_GUARD_PAGES;
    if (strcmp(e, "canary") == 0)
        return PT_STACK_GUARD_CANARY;
    return -1;
}

/* PT_FD_IO, when set, overrides the option, as PT_STACK_GUARD does: -1
 * for a value it does not know. */
static int fd_io(enum pt_fd_io opt)
{
    const char *e = getenv("PT_FD_IO");
    if (!e)
        return (int)opt;
    if (strcmp(e, "poll") == 0)
        return PT_FD_IO_POLL;
    if (strcmp(e, "uring") == 0)
        return PT_FD_IO_URING;
    return -1;
}

int pt_sched_create(pt_sched **out, const pt_sched_options *opt)
{
    pt_sched_options o = {.timers = PT_TIMERS_PER_P};
    if (opt)
        o = *opt;
    int io = fd_io(o.fd_io);
    int guard = stack_guard(o.stack_guard);
    size_t stack = o.stack_size ? o.stack_size : 64 * 1024;
    struct pt__stack_pool probe;
    /* every argument first: a bad one is -EINVAL whatever the build */
    if (!out || io < PT_FD_IO_POLL || io > PT_FD_IO_URING || o.procs < 0 ||
        o.procs > PT__MAX_PROCS || o.timers < PT_TIMERS_PER_P || o.timers > PT_TIMERS_LHEAP ||
        guard < 0 || stack > PT__STACK_MAX || o.timer_slack < 0 ||
        pt__stack_pool_init(&probe, stack + pt__g_room(), (enum pt_stack_guard)guard) < 0)
        return -EINVAL;
#ifndef PT_HAVE_URING
    if (io == PT_FD_IO_URING)
        return -ENOTSUP; /* built without liburing */
#endif
    o.fd_io = (enum pt_fd_io)io;
    /* best effort: without it, a G overflowing onto a faulting guard dies
     * by the bare SIGSEGV, unnamed */
    (void)pt__fault_install();
    int cpus = usable_cpus();
    if (o.procs == 0)
        o.procs = cpus;
    pt_sched *s = pt__alloc_lines(sizeof *s);
    if (!s)
        return -ENOMEM;
    memset(s, 0, sizeof *s);
    s->opt = o;
    s->cpus = cpus;
    s->stacks = probe;
    pt__lock_init(&s->lock);
    atomic_init(&s->nprocs, o.procs);
    atomic_init(&s->preempt_slice, PT__PREEMPT_SLICE_NS);
    s->magic = PT__SCHED_MAGIC;
    if (o.virtual_time ? pt__vt_init(s) < 0
                       : o.timers == PT_TIMERS_TIMERTHREAD && !(s->tt = pt_timerthread_global())) {
        free_all(s);
        return -ENOMEM;
    }
    int err = pt_netpoll_create(&s->np, NULL);
    if (err < 0) {
        s->np = NULL;
        free_all(s);
        return err;
    }
    err = pthread_create(&s->sysmon.thread, NULL, pt__sysmon_main, s);
    if (err) {
        free_all(s);
        return -err;
    }
    if ((err = grow(s, o.procs)) < 0) {
        stop_threads(s);
        free_all(s);
        return err;
    }
    *out = s;
    return 0;
}

int pt_sched_wait(pt_sched *s)
{
    if (!sched_valid(s))
        return -EINVAL;
    if (pt_g_current())
        return -EDEADLK;
    for (;;) {
        uint32_t seen = atomic_load_explicit(&s->gdone_word, memory_order_acquire);
        /* acquire: pairs with the exiting G's release decrement */
        if (atomic_load_explicit(&s->gcount, memory_order_acquire) == 0)
            return 0;
        if (atomic_load_explicit(&s->vt.deadlocked, memory_order_acquire))
            return -ENOTRECOVERABLE;
        pt__futex_wait(&s->gdone_word, seen, 0);
    }
}

/* The time.* timers of s made and not yet freed: the count off the Ps
 * and each P's (time.c's live_count). */
static int64_t time_timers_alive(pt_sched *s)
{
    int64_t n = atomic_load_explicit(&s->time_timers, memory_order_acquire);
    int made = atomic_load_explicit(&s->maxprocs_made, memory_order_acquire);
    for (int i = 0; i < made; i++)
        n += atomic_load_explicit(&s->ps[i]->time.timers, memory_order_acquire);
    return n;
}

int pt_sched_destroy(pt_sched *s)
{
    if (!sched_valid(s))
        return -EINVAL;
    struct pt__m *m = pt__cur_m();
    if (m && m->s == s)
        return -EDEADLK;
    /* a live time timer may fire into s (AfterFunc starts a G) or sit on
     * a P's heap: both outlive s unless refused here */
    bool deadlocked = atomic_load_explicit(&s->vt.deadlocked, memory_order_acquire);
    if ((!deadlocked && atomic_load_explicit(&s->gcount, memory_order_acquire) != 0) ||
        time_timers_alive(s) != 0)
        return -EBUSY;
    if (deadlocked && pt__g_free_parked(s) < 0)
        return -ENOMEM;
    stop_threads(s);
    free_all(s);
    return 0;
}

int pt_sched_run(const pt_sched_options *opt, void (*fn)(void *), void *arg)
{
    if (!fn)
        return -EINVAL;
    /* from a G the wait below could never be made: refused before fn
     * is started */
    if (pt_g_current())
        return -EDEADLK;
    pt_sched *s;
    int err = pt_sched_create(&s, opt);
    if (err < 0)
        return err;
    if ((err = pt_go(s, fn, arg)) == 0)
        err = pt_sched_wait(s);
    /* -EBUSY: fn's Gs left time.* timers unfreed, and s stays for them */
    int derr = pt_sched_destroy(s);
    return err < 0 ? err : derr;
}

int pt_sched_set_procs(pt_sched *s, int procs)
{
    if (!sched_valid(s) || procs < 1 || procs > PT__MAX_PROCS)
        return -EINVAL;
    pt__lock(&s->lock);
    int err = grow(s, procs);
    if (err == 0)
        atomic_store_explicit(&s->nprocs, procs, memory_order_seq_cst);
    pt__unlock(&s->lock);
    if (err == 0) {
        pt__wake_all(s); /* removed Ps retire, restored ones resume */
        pt__sysmon_kick(s); /* its "every P idle" may no longer hold */
    }
    return err;
}

int pt_sched_procs(const pt_sched *s)
{
    return sched_valid(s) ? atomic_load_explicit(&((pt_sched *)s)->nprocs, memory_order_relaxed)
                          : -EINVAL;
}

void pt_sched_read_stats(pt_sched *s, pt_sched_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!sched_valid(s))
        return;
#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)
    out->gs_created = LOAD(s->st.gs_created);
    int64_t live = LOAD(s->gcount);
    out->gs_running_now = live > 0 ? (uint64_t)live : 0;
    int n = LOAD(s->maxprocs_made);
    for (int i = 0; i < n; i++) {
        struct pt__p *p = s->ps[i];
        out->steals += LOAD(p->n_steals);
        out->timers_run_owner += LOAD(p->n_timers_owner);
        out->timers_run_stolen += LOAD(p->n_timers_stolen);
        out->overflowed += LOAD(p->n_overflowed);
        out->handoffs += LOAD(p->n_handoffs);
        out->gs_created += LOAD(p->n_gs_created);
        for (int k = 0; k < NSERVICES; k++)
            if (services[k]->p_stats)
                services[k]->p_stats(p, out);
    }
    out->timers_run_sysmon = LOAD(s->st.timers_sysmon);
    out->netpoll_waits = LOAD(s->st.netpoll_waits);
    pt_netpoll_stats ns;
    pt_netpoll_read_stats(s->np, &ns);
    out->netpoll_breaks = ns.signals;
    out->parks = LOAD(s->st.parks);
    out->spinning_max = LOAD(s->st.spinning_max);
    out->sysmon_wakeps = LOAD(s->st.sysmon_wakeps);
    out->procs = (uint64_t)LOAD(s->nprocs);
    out->preempts = LOAD(s->st.preempts);
    out->stacks_guard_region = LOAD(s->stacks.live[PT__STACK_REGION]);
    out->stacks_guard_page = LOAD(s->stacks.live[PT__STACK_PAGE]);
    out->stacks_canary = LOAD(s->stacks.live[PT__STACK_CANARY]);
    out->stack_reservations = LOAD(s->stacks.nchunks);
    out->stacks_prepared = LOAD(s->stacks.prepared);
#undef LOAD
}
