/* G stacks: sizes, injected failure, each guard, reuse, many stacks. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "util.h"
#include "sched/sanitizer.h" /* PT__TSAN */

void test_stack_alloc_rounds_to_pages_and_honours_injected_failure(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct pt__stack_pool sp;
    CHECK_EQ(pt__stack_pool_init(&sp, 0, PT_STACK_GUARD_AUTO), -EINVAL);
    CHECK_EQ(pt__stack_pool_init(&sp, PT__STACK_POOL_MAX + 1, PT_STACK_GUARD_AUTO), -EINVAL);
    CHECK_EQ(pt__stack_pool_init(&sp, SIZE_MAX - 100, PT_STACK_GUARD_AUTO), -EINVAL);
    CHECK_EQ(pt__stack_pool_init(&sp, page, (enum pt_stack_guard)3), -EINVAL);
    CHECK_EQ(pt__stack_pool_init(&sp, page, (enum pt_stack_guard)-1), -EINVAL);

    const size_t sizes[] = {1, page - 1, page, page + 1, 5 * page + 17};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        CHECK_EQ(pt__stack_pool_init(&sp, sizes[i], PT_STACK_GUARD_AUTO), 0);
        struct pt__stack st = {0};
        CHECK_EQ(pt__stack_alloc(&sp, &st), 0);
        CHECK_EQ(st.size % page, 0);
        CHECK(st.size >= sizes[i] && st.size < sizes[i] + page);
        CHECK_EQ((uintptr_t)st.lo % page, 0);
        /* writable end to end */
        memset(st.lo, 0xa5, st.size);
        pt__stack_free(&sp, &st);
        CHECK(st.lo == NULL);
        pt__stack_free(&sp, &st); /* a zeroed one: no-op */
        pt__stack_pool_fini(&sp);
    }

    /* the second allocation from now fails, once, leaving *st alone */
    CHECK_EQ(pt__stack_pool_init(&sp, page, PT_STACK_GUARD_AUTO), 0);
    pt__alloc_fail_after(1);
    struct pt__stack a, b = {.lo = (void *)&b, .size = 12345};
    CHECK_EQ(pt__stack_alloc(&sp, &a), 0);
    CHECK_EQ(pt__stack_alloc(&sp, &b), -ENOMEM);
    CHECK(b.lo == (void *)&b && b.size == 12345);
    CHECK(!pt__alloc_fail_armed());
    CHECK_EQ(pt__stack_alloc(&sp, &b), 0);
    CHECK(a.lo != b.lo);
    pt__stack_free(&sp, &a);
    pt__stack_free(&sp, &b);
    pt__stack_pool_fini(&sp);
}

/* ---- the guard page ----------------------------------------------------------- */

static volatile size_t depth_limit = SIZE_MAX; /* never reached: defeats -Winfinite-recursion */
static char *volatile stop_below;             /* a frame below this returns; NULL: none */
static char *guard_lo;
static size_t guard_size;

/* A frame well under a page that touches both of its ends, so the guard
 * page cannot be stepped over. Not a tail call: the addition comes after. */
static __attribute__((noinline)) size_t recurse(size_t n)
{
    volatile char pad[512];
    pad[0] = (char)n;
    pad[sizeof pad - 1] = (char)n;
    if (n >= depth_limit || (char *)&pad[0] < stop_below)
        return n;
    return recurse(n + 1) + (size_t)pad[0];
}

struct overflow {
    struct pt__fiber thread;
    struct pt__fiber fib;
    struct pt__stack st;
};

static void overflow_fiber(void *arg)
{
    struct overflow *o = arg;
    pt__fiber_started(&o->fib);
    recurse(0);
    pt__fiber_exit(&o->fib, &o->thread);
}

static void overflow_make(struct overflow *o, struct pt__stack_pool *sp, enum pt_stack_guard g)
{
    CHECK_EQ(pt__stack_pool_init(sp, TEST_STACK_BYTES, g), 0);
    CHECK_EQ(pt__stack_alloc(sp, &o->st), 0);
    pt__fiber_make(&o->fib, o->st.lo, o->st.size, overflow_fiber, o);
    pt__fiber_init_thread(&o->thread);
}

enum { HIT_GUARD = 43, FAULT_ELSEWHERE = 44, NO_FAULT = 45 };

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    char *addr = si->si_addr;
    _exit(addr >= guard_lo && addr < guard_lo + guard_size ? HIT_GUARD : FAULT_ELSEWHERE);
}

static void overflow_child(int with_handler, enum pt_stack_guard g)
{
    static struct overflow o;
    static struct pt__stack_pool sp;
    overflow_make(&o, &sp, g);
    guard_size = (size_t)sysconf(_SC_PAGESIZE);
    guard_lo = (char *)o.st.lo - guard_size;
    if (with_handler) {
        /* The fault leaves no stack to run a handler on: give it one. */
        static char altstack[1 << 16];
        stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
        CHECK_EQ(sigaltstack(&ss, NULL), 0);
        struct sigaction sa = {.sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_ONSTACK};
        sigemptyset(&sa.sa_mask);
        CHECK_EQ(sigaction(SIGSEGV, &sa, NULL), 0);
    }
    pt__fiber_switch(&o.thread, &o.fib);
    _exit(NO_FAULT);
}

static int run_child(int with_handler, enum pt_stack_guard g)
{
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        overflow_child(with_handler, g);
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    return status;
}

void test_overflow_faults_on_the_guard_page(void)
{
    /* A guard region where the kernel has them, and a PROT_NONE page as an
     * older kernel gets (within the process's cap, far off here). */
    const enum pt_stack_guard guards[] = {PT_STACK_GUARD_AUTO, PT_STACK_GUARD_PAGES};
    for (int i = 0; i < 2; i++) {
        /* With a handler on an alternate stack: the fault is a SIGSEGV at
         * an address inside the guard page, not anywhere else. */
        int status = run_child(1, guards[i]);
        CHECK(WIFEXITED(status));
        CHECK_EQ(WEXITSTATUS(status), HIT_GUARD);
#ifndef PT__SANITIZED
        /* Without one the process dies of it. Not under a sanitizer: ASan
         * and TSan install their own SIGSEGV handler, which reports the
         * overflow and exits (or aborts) rather than letting the signal
         * kill us. */
        status = run_child(0, guards[i]);
        CHECK(WIFSIGNALED(status));
        CHECK_EQ(WTERMSIG(status), SIGSEGV);
#endif
    }
}

/* A canary stack has no faulting guard: an overflow that goes less than a
 * page past the stack touches the page below it, which the kernel then
 * reports resident (the scheduler asks at a switch near the stack's end,
 * and its monitor of every stack in use), and nothing further down. */
void test_overflow_into_a_canary_page_is_seen(void)
{
#ifdef PT__TSAN
    /* TSan's runtime faults in the recursion's frames below the fiber's
     * stack (a SEGV in its own bookkeeping): nothing of ours to check */
    SKIP("ThreadSanitizer's runtime faults in the overflow's frames itself");
#endif
    struct overflow o;
    struct pt__stack_pool sp;
    CHECK_EQ(pt__stack_pool_init(&sp, TEST_STACK_BYTES, PT_STACK_GUARD_CANARY), 0);
    /* a neighbour below, its top written as a G's would be (slots are
     * carved upwards) */
    struct pt__stack below;
    CHECK_EQ(pt__stack_alloc(&sp, &below), 0);
    CHECK_EQ(pt__stack_alloc(&sp, &o.st), 0);
    pt__fiber_make(&o.fib, o.st.lo, o.st.size, overflow_fiber, &o);
    pt__fiber_init_thread(&o.thread);
    CHECK_EQ(o.st.kind, PT__STACK_CANARY);
    CHECK(!pt__stack_guard_touched(&o.st));
    bool adjacent = (char *)below.lo + below.size + (size_t)sysconf(_SC_PAGESIZE) == (char *)o.st.lo;
    if (adjacent)
        memset((char *)below.lo + below.size - 64, 0x5a, 64);

    stop_below = (char *)o.st.lo - 1024; /* well inside the page below */
    pt__fiber_switch(&o.thread, &o.fib);
    stop_below = NULL;
    CHECK(pt__stack_guard_touched(&o.st));
    if (adjacent)
        for (int i = 1; i <= 64; i++)
            CHECK_EQ(((unsigned char *)below.lo)[below.size - i], 0x5a);
    pt__fiber_destroy(&o.fib);
    pt__stack_free(&sp, &o.st);
    pt__stack_free(&sp, &below);
    pt__stack_pool_fini(&sp);
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
    CHECK_EQ(pt__stack_alloc(test_stacks(), &st), 0);
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
    pt__stack_free(test_stacks(), &st);
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

static size_t resident_pages(const void *lo, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = len / page, in = 0;
    unsigned char *vec = malloc(n);
    CHECK(vec != NULL);
    CHECK_EQ(mincore((void *)lo, len, vec), 0);
    for (size_t i = 0; i < n; i++)
        in += vec[i] & 1;
    free(vec);
    return in;
}

/* More stacks than vm.max_map_count (65530 by default) would allow if each
 * guard page were a mapping of its own, under each policy: a guard
 * region (where the kernel has them) costs no mapping, a guard page two,
 * and past the process's cap of guard pages the stacks get canaries. All
 * carved from a few reservations; freed, their pages go back to the
 * kernel, a freed slot is the next one handed out, and the reservations
 * go but for one. */
static void many_stacks(enum pt_stack_guard g, int n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct pt__stack_pool sp;
    CHECK_EQ(pt__stack_pool_init(&sp, 4 * page, g), 0);
    struct pt__stack *st = calloc((size_t)n, sizeof *st);
    CHECK(st != NULL);
    int before = mappings();
    for (int i = 0; i < n; i++)
        CHECK_EQ(pt__stack_alloc(&sp, &st[i]), 0);
    int grown = mappings() - before;
    (void)grown; /* unchecked under TSan */
    uint64_t chunks = atomic_load(&sp.nchunks);
    CHECK(chunks >= 1 && chunks <= (uint64_t)n / sp.per_chunk + 1);
    uint64_t regions = atomic_load(&sp.live[PT__STACK_REGION]),
             pages = atomic_load(&sp.live[PT__STACK_PAGE]),
             canaries = atomic_load(&sp.live[PT__STACK_CANARY]);
    CHECK_EQ(regions + pages + canaries, (uint64_t)n);
    /* two mappings per guard page, the reservations' own, and slack for
     * whatever else the process maps meanwhile (TSan maps shadow for
     * each mapping of ours) */
#ifndef PT__TSAN
    CHECK(grown <= (int)(2 * pages + chunks) + 16);
#endif
    if (g == PT_STACK_GUARD_CANARY)
        CHECK_EQ(canaries, (uint64_t)n);
    if (g == PT_STACK_GUARD_PAGES)
        CHECK_EQ(regions, 0);
    if (g == PT_STACK_GUARD_AUTO && pt__stack_guard_regions())
        CHECK_EQ(regions, (uint64_t)n);
    /* each stack writable at both ends, and its own */
    for (int i = 0; i < n; i++) {
        ((char *)st[i].lo)[0] = (char)(i + 1);
        ((char *)st[i].lo)[st[i].size - 1] = (char)i;
        CHECK(!pt__stack_guard_touched(&st[i]));
    }
    for (int i = 0; i < n; i++) {
        CHECK_EQ(((char *)st[i].lo)[0], (char)(i + 1));
        CHECK_EQ(((char *)st[i].lo)[st[i].size - 1], (char)i);
    }
    /* a freed stack's pages are given back, and its slot is reused next */
    struct pt__stack mid = st[n / 2];
    CHECK(resident_pages(mid.lo, mid.size) >= 2);
    pt__stack_free(&sp, &st[n / 2]);
    CHECK_EQ(resident_pages(mid.lo, mid.size), 0);
    CHECK_EQ(pt__stack_alloc(&sp, &st[n / 2]), 0);
    CHECK(st[n / 2].lo == mid.lo && st[n / 2].kind == mid.kind);
    CHECK_EQ(((char *)st[n / 2].lo)[0], 0); /* the kernel's zeroes, not the old G's */
    for (int i = 0; i < n; i++)
        pt__stack_free(&sp, &st[i]);
    CHECK_EQ(atomic_load(&sp.live[PT__STACK_REGION]) + atomic_load(&sp.live[PT__STACK_PAGE]) +
                 atomic_load(&sp.live[PT__STACK_CANARY]),
             0);
    CHECK_EQ(atomic_load(&sp.nchunks), 1); /* the spare */
#ifndef PT__TSAN
    CHECK(mappings() - before <= 2 * (int)sp.per_chunk + 16);
#endif
    pt__stack_pool_fini(&sp);
    CHECK_EQ(atomic_load(&sp.nchunks), 0);
#ifndef PT__TSAN
    CHECK(mappings() <= before + 16);
#endif
    free(st);
}

void test_forty_thousand_stacks_stay_a_few_mappings(void)
{
#ifdef PT__TSAN
    const int n = 4000; /* the mappings go uncounted under TSan (above) */
#else
    const int n = 40000;
#endif
    many_stacks(PT_STACK_GUARD_AUTO, n);
    many_stacks(PT_STACK_GUARD_PAGES, n);
    many_stacks(PT_STACK_GUARD_CANARY, n);
}

/* ---- slots prepared ahead of a burst ------------------------------------------ */

/* Whether the kernel refuses to read the page at p: a guard's. */
static bool unreadable(const char *p)
{
    int fds[2];
    CHECK_EQ(pipe(fds), 0);
    bool refused = write(fds[1], p, 1) < 0 && errno == EFAULT;
    close(fds[0]);
    close(fds[1]);
    return refused;
}

/* Whether MADV_POPULATE_WRITE makes a page resident here: a kernel
 * before 5.14 refuses it, and qemu-user accepts it and does nothing. */
static bool populate_works(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    bool works = madvise(p, page, 23 /* MADV_POPULATE_WRITE */) == 0 && resident_pages(p, page) == 1;
    munmap(p, page);
    return works;
}

/* A slot handed out after preparation is the one the pool would have
 * handed out, guarded as it would have been, with the page its G lives
 * in already resident; preparation stays a bounded distance ahead, and
 * stops once nothing is being made. */
static void prepared_slots(enum pt_stack_guard g)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct pt__stack_pool sp;
    CHECK_EQ(pt__stack_pool_init(&sp, 4 * page, g), 0);
    enum { N = 400, BURST = PT__STACK_BURST };
    struct pt__stack st[N];
    /* a few stacks are not a burst: nothing is prepared for them */
    for (int i = 0; i < BURST - 1; i++)
        CHECK_EQ(pt__stack_alloc(&sp, &st[i]), 0);
    CHECK(!pt__stack_prepare(&sp, 8));
    CHECK_EQ(pt__stack_alloc(&sp, &st[BURST - 1]), 0); /* now one */
    if (st[0].kind == PT__STACK_PAGE) { /* a kernel without guard regions */
        CHECK(!pt__stack_prepare(&sp, 16));
        for (int i = 0; i < BURST; i++)
            pt__stack_free(&sp, &st[i]);
        pt__stack_pool_fini(&sp);
        return;
    }
    CHECK(pt__stack_prepare(&sp, 16));
    CHECK_EQ(atomic_load(&sp.prepared), 16);
    /* to the bound, then no further until stacks are taken */
    while (pt__stack_prepare(&sp, 1000))
        ;
    uint64_t ahead = atomic_load(&sp.prepared);
    CHECK(ahead > 16 && ahead <= PT__STACK_AHEAD);
    CHECK(!pt__stack_prepare(&sp, 1000));
    uint64_t resident_at_once = 0;
    for (int i = BURST; i < N; i++) {
        CHECK_EQ(pt__stack_alloc(&sp, &st[i]), 0);
        CHECK(st[i].lo != st[i - 1].lo);
        CHECK_EQ(st[i].kind, st[0].kind);
        const char *top = (const char *)st[i].lo + st[i].size - page;
        resident_at_once += resident_pages(top, page);
        if (st[i].kind == PT__STACK_CANARY)
            CHECK(!pt__stack_guard_touched(&st[i]));
        else
            CHECK(unreadable((const char *)st[i].lo - 1));
        memset(st[i].lo, 0x5a, st[i].size); /* writable end to end */
    }
    /* every prepared slot was handed out with its page in (none was
     * skipped), and the others without; where populating is a no-op,
     * none had it */
    CHECK_EQ(resident_at_once, populate_works() ? ahead : 0);
    for (int i = 0; i < N; i++)
        pt__stack_free(&sp, &st[i]);
    pt__stack_pool_fini(&sp);
}

void test_prepared_stacks_are_the_next_ones_guarded_and_resident(void)
{
    prepared_slots(PT_STACK_GUARD_AUTO);
    prepared_slots(PT_STACK_GUARD_CANARY);
    /* Not slots that would get a PROT_NONE page: while the process's
     * budget of them lasts, preparing is refused. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct pt__stack_pool sp;
    CHECK_EQ(pt__stack_pool_init(&sp, 4 * page, PT_STACK_GUARD_PAGES), 0);
    struct pt__stack many[PT__STACK_BURST];
    for (unsigned i = 0; i < PT__STACK_BURST; i++) {
        CHECK_EQ(pt__stack_alloc(&sp, &many[i]), 0);
        CHECK_EQ(many[i].kind, PT__STACK_PAGE);
    }
    CHECK(!pt__stack_prepare(&sp, 8));
    CHECK_EQ(atomic_load(&sp.prepared), 0);
    for (unsigned i = 0; i < PT__STACK_BURST; i++)
        pt__stack_free(&sp, &many[i]);
    pt__stack_pool_fini(&sp);
}

/* One thread takes and gives back stacks while another prepares: every
 * stack handed out is distinct and whole, whichever of the two guarded
 * it, and the counts come back to nothing. */
struct prep_race {
    struct pt__stack_pool sp;
    atomic_int done;
};

static void *preparer(void *arg)
{
    struct prep_race *r = arg;
    while (!atomic_load(&r->done))
        if (!pt__stack_prepare(&r->sp, 3))
            sched_yield();
    return NULL;
}

void test_stacks_taken_while_another_thread_prepares_them(void)
{
#ifdef PT__TSAN
    enum { N = 800, ROUNDS = 3 };
#else
    enum { N = 4000, ROUNDS = 3 };
#endif
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const enum pt_stack_guard guards[] = {PT_STACK_GUARD_AUTO, PT_STACK_GUARD_CANARY};
    for (size_t gi = 0; gi < 2; gi++) {
        struct prep_race r = {.done = 0};
        CHECK_EQ(pt__stack_pool_init(&r.sp, 2 * page, guards[gi]), 0);
        pthread_t th;
        CHECK_EQ(pthread_create(&th, NULL, preparer, &r), 0);
        struct pt__stack *st = calloc(N, sizeof *st);
        CHECK(st != NULL);
        for (int round = 0; round < ROUNDS; round++) {
            for (int i = 0; i < N; i++) {
                CHECK_EQ(pt__stack_alloc(&r.sp, &st[i]), 0);
                CHECK(st[i].kind != 0);
                *(int *)((char *)st[i].lo + st[i].size - sizeof(int)) = i; /* its top */
                *(int *)st[i].lo = i;                                      /* its bottom */
            }
            for (int i = 0; i < N; i++) {
                CHECK_EQ(*(int *)((char *)st[i].lo + st[i].size - sizeof(int)), i);
                CHECK_EQ(*(int *)st[i].lo, i);
                CHECK(!pt__stack_guard_touched(&st[i]));
            }
            /* half back, so the next round mixes reused and fresh slots */
            for (int i = 0; i < N; i += 2)
                pt__stack_free(&r.sp, &st[i]);
            for (int i = 0; i < N; i += 2)
                CHECK_EQ(pt__stack_alloc(&r.sp, &st[i]), 0);
            for (int i = 0; i < N; i++)
                pt__stack_free(&r.sp, &st[i]);
        }
        atomic_store(&r.done, 1);
        CHECK_EQ(pthread_join(th, NULL), 0);
        CHECK_EQ(atomic_load(&r.sp.live[PT__STACK_REGION]) +
                     atomic_load(&r.sp.live[PT__STACK_PAGE]) +
                     atomic_load(&r.sp.live[PT__STACK_CANARY]),
                 0);
        pt__stack_pool_fini(&r.sp);
        free(st);
    }
}

/* The canary's checks never touch the page they guard: where the kernel
 * has no shared zero page, a read of it would cost a page a G. A switch
 * far from the end asks nothing, one near it asks the kernel, one below
 * it is an overflow without asking; the monitor's sweep finds the one
 * stack whose guard a write touched, among untouched ones. */
void test_canary_checks_touch_no_guard_page_and_the_sweep_finds_a_touched_one(void)
{
    enum { N = 40 };
    struct pt__stack_pool sp;
    CHECK_EQ(pt__stack_pool_init(&sp, TEST_STACK_BYTES, PT_STACK_GUARD_CANARY), 0);
    struct pt__stack st[N];
    for (int i = 0; i < N; i++) {
        CHECK_EQ(pt__stack_alloc(&sp, &st[i]), 0);
        CHECK_EQ(st[i].kind, PT__STACK_CANARY);
        memset((char *)st[i].lo + st[i].size - 64, 0x5a, 64); /* its top, as a G's */
    }
    for (int i = 0; i < N; i++) {
        uintptr_t lo = (uintptr_t)st[i].lo;
        CHECK(pt__stack_intact(&st[i], lo + st[i].size - 128));
        CHECK(pt__stack_intact(&st[i], lo + 256)); /* near the end: the kernel is asked */
        CHECK(!pt__stack_intact(&st[i], lo - 16)); /* below it */
        CHECK(!pt__stack_guard_touched(&st[i]));
    }
    CHECK(pt__stack_sweep(&sp, 1000) == NULL);
    CHECK(pt__stack_sweep(&sp, 1000) == NULL);
    for (int i = 0; i < N; i++)
        CHECK(!pt__stack_guard_touched(&st[i])); /* the sweep read none either */
    /* an overflow that came back: the word it left below stack 23 */
    ((volatile char *)st[23].lo)[-8] = 1;
    CHECK(pt__stack_guard_touched(&st[23]));
    CHECK(!pt__stack_intact(&st[23], (uintptr_t)st[23].lo + 256));
    CHECK(pt__stack_intact(&st[23], (uintptr_t)st[23].lo + st[23].size - 128)); /* far: not asked */
    void *seen = NULL;
    for (int k = 0; k < 4 && !seen; k++) /* wherever the last look stopped */
        seen = pt__stack_sweep(&sp, 1000);
    CHECK(seen == st[23].lo);
    for (int i = 0; i < N; i++)
        pt__stack_free(&sp, &st[i]);
    pt__stack_pool_fini(&sp);
}
