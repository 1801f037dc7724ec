/* G stacks: sizes, injected failure, the guard page, reuse. */
#include <errno.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptimer/base/alloc.h"
#include "util.h"

void test_stack_alloc_rounds_to_pages_and_honours_injected_failure(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct pt__stack st = {0};
    CHECK_EQ(pt__stack_alloc(&st, 0), -EINVAL);
    CHECK_EQ(pt__stack_alloc(&st, SIZE_MAX - 100), -ENOMEM);
    CHECK(st.lo == NULL);

    const size_t sizes[] = {1, page - 1, page, page + 1, 5 * page + 17};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        CHECK_EQ(pt__stack_alloc(&st, sizes[i]), 0);
        CHECK_EQ(st.size % page, 0);
        CHECK(st.size >= sizes[i] && st.size < sizes[i] + page);
        CHECK_EQ((uintptr_t)st.lo % page, 0);
        /* writable end to end */
        memset(st.lo, 0xa5, st.size);
        pt__stack_free(&st);
        CHECK(st.lo == NULL);
    }
    pt__stack_free(&st); /* a zeroed one: no-op */

    /* the second allocation from now fails, once, leaving *st alone */
    pt__alloc_fail_after(1);
    struct pt__stack a, b = {(void *)&b, 12345};
    CHECK_EQ(pt__stack_alloc(&a, page), 0);
    CHECK_EQ(pt__stack_alloc(&b, page), -ENOMEM);
    CHECK(b.lo == (void *)&b && b.size == 12345);
    CHECK(!pt__alloc_fail_armed());
    CHECK_EQ(pt__stack_alloc(&b, page), 0);
    pt__stack_free(&a);
    pt__stack_free(&b);
}

/* ---- the guard page ----------------------------------------------------------- */

static volatile size_t depth_limit = SIZE_MAX; /* never reached: defeats -Winfinite-recursion */
static char *guard_lo;
static size_t guard_size;

/* A frame well under a page that touches both of its ends, so the guard
 * page cannot be stepped over. Not a tail call: the addition comes after. */
static __attribute__((noinline)) size_t recurse(size_t n)
{
    volatile char pad[512];
    pad[0] = (char)n;
    pad[sizeof pad - 1] = (char)n;
    if (n >= depth_limit)
        return n;
    return recurse(n + 1) + (size_t)pad[0];
}

struct overflow {
    struct pt__fiber thread;
    struct tfiber fib;
};

static void overflow_fiber(void *arg)
{
    struct overflow *o = arg;
    pt__fiber_started(&o->fib.f);
    recurse(0);
    pt__fiber_exit(&o->fib.f, &o->thread);
}

enum { HIT_GUARD = 43, FAULT_ELSEWHERE = 44, NO_FAULT = 45 };

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    char *addr = si->si_addr;
    _exit(addr >= guard_lo && addr < guard_lo + guard_size ? HIT_GUARD : FAULT_ELSEWHERE);
}

static void overflow_child(int with_handler)
{
    static struct overflow o;
    tfiber_make(&o.fib, overflow_fiber, &o);
    guard_size = (size_t)sysconf(_SC_PAGESIZE);
    guard_lo = (char *)o.fib.st.lo - guard_size;
    if (with_handler) {
        /* The fault leaves no stack to run a handler on: give it one. */
        static char altstack[1 << 16];
        stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
        CHECK_EQ(sigaltstack(&ss, NULL), 0);
        struct sigaction sa = {.sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_ONSTACK};
        sigemptyset(&sa.sa_mask);
        CHECK_EQ(sigaction(SIGSEGV, &sa, NULL), 0);
    }
    pt__fiber_init_thread(&o.thread);
    pt__fiber_switch(&o.thread, &o.fib.f);
    _exit(NO_FAULT);
}

static int run_child(int with_handler)
{
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        overflow_child(with_handler);
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    return status;
}

void test_overflow_faults_on_the_guard_page(void)
{
    /* With a handler on an alternate stack: the fault is a SIGSEGV at an
     * address inside the guard page, not anywhere else. */
    int status = run_child(1);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), HIT_GUARD);
#ifndef PT__SANITIZED
    /* Without one the process dies of it. Not under a sanitizer: ASan and
     * TSan install their own SIGSEGV handler, which reports the overflow
     * and exits (or aborts) rather than letting the signal kill us. */
    status = run_child(0);
    CHECK(WIFSIGNALED(status));
    CHECK_EQ(WTERMSIG(status), SIGSEGV);
#endif
}

/* ---- reuse ---------------------------------------------------------------------- */

struct reuse {
    struct pt__fiber thread;
    struct pt__fiber fib;
    long runs;
    long resumed;
};

/* Called through a pointer: GCC takes a recursion whose every other path
 * ends in a _Noreturn call for an infinite one. */
static void (*volatile exit_fiber)(struct pt__fiber *, struct pt__fiber *) = pt__fiber_exit;

/* Leaves from a few frames down with locals (ASan redzones) still live:
 * the next fiber on the stack must not trip over what this one left. */
static __attribute__((noinline)) void reuse_deep(struct reuse *r, int depth)
{
    volatile char buf[64];
    buf[0] = (char)depth;
    if (depth > 0) {
        reuse_deep(r, depth - 1);
        return;
    }
    r->runs += buf[0] == 0;
    exit_fiber(&r->fib, &r->thread);
}

static void reuse_fiber(void *arg)
{
    struct reuse *r = arg;
    pt__fiber_started(&r->fib);
    pt__fiber_switch(&r->fib, &r->thread); /* suspended and resumed once */
    r->resumed++;
    reuse_deep(r, 3);
    abort(); /* reuse_deep exits the fiber */
}

void test_one_stack_reused_by_ten_thousand_fibers(void)
{
    struct pt__stack st;
    CHECK_EQ(pt__stack_alloc(&st, TEST_STACK_BYTES), 0);
    struct reuse r = {0};
    pt__fiber_init_thread(&r.thread);
    const long n = 10000;
    for (long i = 0; i < n; i++) {
        pt__fiber_make(&r.fib, st.lo, st.size, reuse_fiber, &r);
        pt__fiber_switch(&r.thread, &r.fib);
        CHECK_EQ(r.resumed, i);
        pt__fiber_switch(&r.thread, &r.fib);
        CHECK_EQ(r.resumed, i + 1);
        CHECK_EQ(r.runs, i + 1);
    }
    pt__fiber_destroy(&r.fib);
    pt__stack_free(&st);
}

/* ---- many stacks ------------------------------------------------------------------ */

static int mappings(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL);
    int n = 0;
    for (int c; (c = fgetc(f)) != EOF;)
        n += c == '\n';
    fclose(f);
    return n;
}

/* More stacks than vm.max_map_count (65530 by default) allows when each
 * guard page is a mapping of its own: with guard regions, stacks cost no
 * mapping each. Without them (a kernel before 6.13, qemu-user) only a
 * thousand, checked to have cost at most two mappings each. */
void test_forty_thousand_stacks_stay_a_few_mappings(void)
{
    struct pt__stack one;
    CHECK_EQ(pt__stack_alloc(&one, 4096), 0); /* settles which guard this process uses */
    bool regions = pt__stack_guard_regions();
    const int n = regions ? 40000 : 1000;
    struct pt__stack *st = calloc((size_t)n, sizeof *st);
    CHECK(st != NULL);
    int before = mappings();
    for (int i = 0; i < n; i++)
        CHECK_EQ(pt__stack_alloc(&st[i], 4096), 0);
    int grown = mappings() - before;
    if (regions)
        CHECK(grown < 1000);
    else
        CHECK(grown <= 2 * n + 16);
    /* each stack writable at its top, and its own */
    for (int i = 0; i < n; i++)
        ((char *)st[i].lo)[st[i].size - 1] = (char)i;
    for (int i = 0; i < n; i++)
        CHECK_EQ(((char *)st[i].lo)[st[i].size - 1], (char)i);
    for (int i = 0; i < n; i++)
        pt__stack_free(&st[i]);
    pt__stack_free(&one);
    free(st);
}
