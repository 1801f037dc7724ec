/* A preemption at every instruction of pt_preemptible_begin and end.
 *
 * Between any two instructions of a nested begin or an end the handler
 * may stop the G and some other M may resume it, while the M it left
 * runs another G or none. What the calls can see of that is what their
 * thread-local read (pt__cur_m, the one way to it: fiber.h) answers and
 * what the Ms' curg hold when they read them. So the harness plays the
 * scheduler's part in that world: two Ms of its own, the G on one of
 * them, and at each point where the handler would stop the G (SIGURG
 * not blocked, the G inside a region) it may move the G to the other,
 * leaving that one on g0 (curg NULL) or running another G. The trap
 * flag (x86-64) stops the call after every instruction; pt__cur_m's
 * answer is replaced as it returns by the M the G is on in that world,
 * and the Ms' curg are set as each move leaves them. Every point alone,
 * every pair of points, and random runs of more: each call must still
 * return 0 and move its own G's depth by one, and no other G's.
 *
 * What this does not cover, the stress tests do: the real handler's
 * switch and sigreturn on another thread (nested_regions_survive_...,
 * preemption_requests_in_bursts_...). Not on aarch64 (no trap flag) nor
 * under TSan (regions are refused). */
#define _GNU_SOURCE /* REG_RIP */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "sched/internal.h"
#include "sched/sanitizer.h"
#include "util.h"

#if defined(__x86_64__) && !defined(PT__TSAN)
#define STEPS 1
#endif

#ifdef STEPS

#define TRAP_FLAG 0x100
#define STEP_LIMIT 1000000 /* a call that never returns to the harness: stop stepping */
#define MAX_MOVES 16
#define OTHER_DEPTH 7u /* the other G's depth, which no call here may touch */
/* Pairs of moves up to this many points apart: the whole of the lookup
 * of the G (a thread-local, then its M's curg) and what follows. Each
 * step is a signal: every pair of a whole call would take minutes. */
#ifndef PT__ASAN
#define PAIR_SPAN 12
#define RANDOM_RUNS 200
#else
/* Under ASan each call has several times the points, each a signal: the
 * single moves stay whole, the pairs and the random plans are cut to
 * what keeps the run near the plain build's time (those run whole) */
#define PAIR_SPAN 4
#define RANDOM_RUNS 50
#endif

/* A plan: the points (counted from 0, in the order met) at which the G
 * moves, and what the M it leaves shows then. With a random_seed,
 * instead, a move at about one point in four, up to MAX_MOVES. */
struct plan {
    int n;
    int at[MAX_MOVES];
    bool left_other[MAX_MOVES]; /* the M left runs the other G (else: on g0) */
    uint64_t random_seed;       /* 0: none */
    bool then_run;              /* stop stepping after the last move: the rest runs as is */
};

static struct {
    /* the world: two Ms of the harness's, the G on fake[on] */
    struct pt__m *fake[2];
    int on;
    pt_g *g, *other;
    struct plan plan;
    /* the stepped call */
    uintptr_t fn, fn_ret; /* fn_ret: its return address, once entered */
    bool inside;
    uintptr_t cur_m_ret; /* inside pt__cur_m: where it returns */
    long steps;
    int points, moves;
    uint64_t rng;
    bool runaway;
} w;

static void move(bool left_other)
{
    struct pt__m *from = w.fake[w.on], *to = w.fake[1 - w.on];
    atomic_store_explicit(&from->curg, left_other ? w.other : NULL, memory_order_relaxed);
    atomic_store_explicit(&to->curg, w.g, memory_order_relaxed);
    w.on = 1 - w.on;
    w.moves++;
}

/* SIGTRAP, after each instruction of the stepped call (and of the few
 * around it that the harness ignores). */
static void on_step(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    (void)si;
    ucontext_t *uc = ucv;
    greg_t *r = uc->uc_mcontext.gregs;
    uintptr_t pc = (uintptr_t)r[REG_RIP];
    if (++w.steps > STEP_LIMIT) {
        w.runaway = true;
        r[REG_EFL] &= ~(greg_t)TRAP_FLAG;
        return;
    }
    if (!w.inside) {
        if (pc != w.fn)
            return;
        w.inside = true;
        w.fn_ret = *(uintptr_t *)r[REG_RSP];
    } else if (pc == w.fn_ret) {
        w.inside = false;
        r[REG_EFL] &= ~(greg_t)TRAP_FLAG;
        return;
    }
    /* pt__cur_m's load and its return are one read: the G's M as of the
     * load, whatever move comes after */
    if (w.cur_m_ret) {
        if (pc != w.cur_m_ret)
            return;
        w.cur_m_ret = 0;
        r[REG_RAX] = (greg_t)(uintptr_t)w.fake[w.on];
    }
    /* A point where the handler (preempt.c) would stop the G: SIGURG not
     * blocked, and the G in a region (its stack: the call runs on it) */
    if (!sigismember(&uc->uc_sigmask, SIGURG) &&
        atomic_load_explicit(&w.g->preemptible, memory_order_relaxed) != 0) {
        int k = w.points++;
        if (w.plan.random_seed) {
            uint64_t x = pt__xorshift64(&w.rng);
            if (w.moves < MAX_MOVES && (x & 3) == 0)
                move((x >> 2) & 1);
        } else if (w.moves < w.plan.n && w.plan.at[w.moves] == k) {
            move(w.plan.left_other[w.moves]);
            if (w.moves == w.plan.n && w.plan.then_run) {
                w.inside = false;
                r[REG_EFL] &= ~(greg_t)TRAP_FLAG;
                return;
            }
        }
    }
    if (pc == (uintptr_t)pt__cur_m)
        w.cur_m_ret = *(uintptr_t *)r[REG_RSP];
}

/* fn(), stepped under plan p, the G starting on the first M of the
 * world and the other G on the second. The flag is set by popf; the red
 * zone below the stack pointer, which pushf would write, is stepped
 * over. */
static __attribute__((noinline)) int stepped(int (*fn)(void), const struct plan *p)
{
    atomic_store(&w.fake[0]->curg, w.g);
    atomic_store(&w.fake[1]->curg, w.other);
    w.on = 0;
    w.plan = *p;
    w.rng = p->random_seed;
    w.points = 0;
    w.moves = 0;
    w.runaway = false;
    w.fn = (uintptr_t)fn;
    w.inside = false;
    w.cur_m_ret = 0;
    w.steps = 0;
    atomic_signal_fence(memory_order_seq_cst);
    __asm__ volatile("lea -128(%%rsp), %%rsp\n\t"
                     "pushfq\n\t"
                     "orq $0x100, (%%rsp)\n\t"
                     "popfq\n\t"
                     "lea 128(%%rsp), %%rsp"
                     :
                     :
                     : "memory", "cc");
    int rc = fn();
    /* the handler cleared the flag as fn returned; this, should it not */
    __asm__ volatile("lea -128(%%rsp), %%rsp\n\t"
                     "pushfq\n\t"
                     "andq $~0x100, (%%rsp)\n\t"
                     "popfq\n\t"
                     "lea 128(%%rsp), %%rsp"
                     :
                     :
                     : "memory", "cc");
    atomic_signal_fence(memory_order_seq_cst);
    return rc;
}

/* The G's depth brought to n through the calls themselves, not stepped
 * (one P, one G: nothing preempts it). */
static void set_depth(uint32_t n)
{
    while (atomic_load(&w.g->preemptible) < n)
        CHECK_EQ(pt_preemptible_begin(), 0);
    while (atomic_load(&w.g->preemptible) > n)
        CHECK_EQ(pt_preemptible_end(), 0);
}

/* The calls stepped, each from the depth it needs. pairs: every pair of
 * points up to PAIR_SPAN apart is tried too; not for the outer end,
 * whose points are the nested end's code up to its store, pairs
 * already tried. */
struct subject {
    const char *name;
    int (*fn)(void);
    uint32_t before, after;
    bool pairs;
};

static const struct subject subjects[] = {
    {"an outer begin", pt_preemptible_begin, 0, 1, true},
    {"a nested begin", pt_preemptible_begin, 1, 2, true},
    {"a nested end", pt_preemptible_end, 2, 1, true},
    {"an outer end", pt_preemptible_end, 1, 0, false},
};

static void describe(const struct plan *p, char *buf, size_t len)
{
    if (p->random_seed) {
        snprintf(buf, len, "at random points (seed %llu, %d moves)",
                 (unsigned long long)p->random_seed, w.moves);
        return;
    }
    size_t o = (size_t)snprintf(buf, len, "%s", p->n ? "at point" : "nowhere");
    for (int i = 0; i < p->n && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s %d (the M left %s)", i ? ", and" : "", p->at[i],
                              p->left_other[i] ? "runs another G" : "on g0");
}

/* One stepped call of s under plan p: it returns 0 and moves the G's own
 * depth by one, and the other G's not at all. Returns the points met. */
static int run_plan(const struct subject *s, const struct plan *p)
{
    set_depth(s->before);
    int rc = stepped(s->fn, p);
    uint32_t depth = atomic_load(&w.g->preemptible);
    if (w.runaway || rc != 0 || depth != s->after ||
        atomic_load(&w.other->preemptible) != OTHER_DEPTH) {
        char where[512];
        describe(p, where, sizeof where);
        fprintf(stderr,
                "%s, its G stopped and moved %s: returned %d, depth %u (want 0, %u), the other "
                "G's depth %u (want %u)%s\n",
                s->name, where, rc, depth, s->after, atomic_load(&w.other->preemptible),
                OTHER_DEPTH, w.runaway ? ", never returned" : "");
        abort();
    }
    return w.points;
}

struct steps_tally {
    long runs, points;
    bool no_steps; /* the trap flag stepped nothing (an emulator, a debugger) */
};

/* The world, around the calling G, with `other` for the G the Ms left
 * behind may run; and the trap's handler. */
static void world_open(pt_g *other, struct sigaction *was)
{
    struct pt__m *m = pt__cur_m();
    w.g = pt_g_current();
    w.other = other;
    for (int i = 0; i < 2; i++) {
        w.fake[i] = calloc(1, sizeof *w.fake[i]);
        CHECK(w.fake[i] != NULL);
        w.fake[i]->s = m->s;
        w.fake[i]->p = m->p;
        w.fake[i]->g0.stack_lo = m->g0.stack_lo;
        w.fake[i]->g0.stack_size = m->g0.stack_size;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_step;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGURG);
    CHECK_EQ(sigaction(SIGTRAP, &sa, was), 0);
}

static void world_close(const struct sigaction *was)
{
    CHECK_EQ(sigaction(SIGTRAP, was, NULL), 0);
    for (int i = 0; i < 2; i++)
        free(w.fake[i]);
}

static void steps_g(void *arg)
{
    struct steps_tally *t = arg;
    /* another G that the Ms left behind may run: never run here, it
     * needs only a stack that is not this G's, and a depth */
    static char other_stack[4096];
    pt_g *other = calloc(1, sizeof *other);
    CHECK(other != NULL);
    other->stack.lo = other_stack;
    other->stack.size = sizeof other_stack;
    atomic_store(&other->preemptible, OTHER_DEPTH);
    struct sigaction was;
    world_open(other, &was);

    for (size_t si = 0; si < sizeof subjects / sizeof subjects[0]; si++) {
        const struct subject *s = &subjects[si];
        int n = run_plan(s, &(struct plan){0});
        if (w.steps == 0) {
            t->no_steps = true;
            break;
        }
        t->runs++;
        t->points += n;
        CHECK(n > 0);
        for (int i = 0; i < n; i++)
            for (int l = 0; l < 2; l++) {
                run_plan(s, &(struct plan){.n = 1, .at = {i}, .left_other = {l}});
                t->runs++;
            }
        for (int i = 0; i < n && s->pairs; i++) {
            /* the first move may change how many points come after it;
             * of the four things the two Ms left may show, two a pair,
             * alternating: the others come with the neighbouring pairs */
            for (int j = i + 1; j <= i + PAIR_SPAN; j++) {
                bool made = false;
                for (int l = 0; l < 2; l++) {
                    bool l2 = l ^ ((i + j) & 1);
                    run_plan(s, &(struct plan){.n = 2, .at = {i, j}, .left_other = {l, l2}});
                    t->runs++;
                    made |= w.moves == 2;
                }
                if (!made)
                    break;
            }
        }
        for (uint64_t seed = 1; seed <= RANDOM_RUNS; seed++) {
            run_plan(s, &(struct plan){.random_seed = seed * 0x9e3779b97f4a7c15ull});
            t->runs++;
        }
    }

    set_depth(0);
    world_close(&was);
    free(other);
}

/* ---- misuse: a yield inside a region, its lookup moved ------------------------ */

static pt_g *waiter;

static void park_for_good(void *arg)
{
    (void)arg;
    waiter = pt_g_current();
    pt_park(NULL, NULL);
}

static int yield_0(void)
{
    pt_yield();
    return 0;
}

/* In a child: a yield inside a region, stepped, its G moved at point k
 * and the M it left running a real G that is in no region and parked.
 * Past the move the yield runs unstepped, on the thread's own M: what a
 * lookup made before the move names is what the switch acts on. */
static void yield_moved_g(void *arg)
{
    int k = *(int *)arg;
    CHECK_EQ(pt_go(NULL, park_for_good, NULL), 0);
    pt_yield(); /* the waiter parks */
    CHECK(waiter != NULL);
    struct sigaction was;
    world_open(waiter, &was);
    CHECK_EQ(pt_preemptible_begin(), 0);
    stepped(yield_0, &(struct plan){.n = 1, .at = {k}, .left_other = {true}, .then_run = true});
    _exit(0); /* the yield came back: the misuse went through */
}

/* Runs yield_moved_g(k) in a child; its stderr, and how it ended. */
static void yield_moved_in_child(int k, char *err, size_t len, int *status)
{
    *status = sched_run_in_child(&(pt_sched_options){.procs = 1, .timers = PT_TIMERS_PER_P},
                                 yield_moved_g, &k, err, len);
}

#endif /* STEPS */

/* The forced interleaving: begin and end stopped, and their G moved to
 * another M, at every point where the handler could stop them, one and
 * two at a time and at random. */
void test_begin_and_end_count_their_own_g_wherever_a_preemption_moves_it(void)
{
#ifndef STEPS
    SKIP("single steps with the trap flag: x86-64 only, and not under ThreadSanitizer");
#else
    struct steps_tally t = {0};
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, steps_g, &t), 0);
    finish_sched(s);
    if (t.no_steps)
        SKIP("the trap flag does not step this process (a debugger or a hypervisor takes it)");
    CHECK(t.runs > 0);
    printf("stepped calls %ld, points in the unmoved calls %ld\n", t.runs, t.points);
#endif
}

/* A yield inside a region is stopped (g.c) wherever a preemption moves
 * the G in the middle of finding itself: the G its lookup then names is
 * another, in no region, and the switch would have saved this G's
 * registers as that one's. Each point in a child of its own. */
void test_a_yield_inside_a_region_aborts_wherever_a_preemption_moves_it(void)
{
#ifndef STEPS
    SKIP("single steps with the trap flag: x86-64 only, and not under ThreadSanitizer");
#else
    for (int k = 0; k < 16; k++) {
        char err[4096];
        int status;
        yield_moved_in_child(k, err, sizeof err, &status);
        if (!strstr(err, "inside a preemptible region") ||
            (WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            fprintf(stderr, "moved at point %d: %s (status %#x), said: %s\n", k,
                    WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exited", status, err);
            abort();
        }
    }
#endif
}
