/* G stacks in the scheduler, under each guard policy: as many parked Gs
 * as memory allows whatever vm.max_map_count says, an overflow caught,
 * stacks reused and given back, bad options refused, and running out of
 * memory survived. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "sched/internal.h"
#include "sched/sanitizer.h" /* PT__TSAN */
#include "util.h"

static const enum pt_stack_guard guards[] = {PT_STACK_GUARD_AUTO, PT_STACK_GUARD_PAGES,
                                             PT_STACK_GUARD_CANARY};
static const char *const guard_names[] = {"auto", "pages", "canary"};

static pt_sched *make_guarded(int procs, enum pt_stack_guard g)
{
    pt_sched_options o = {.procs = procs, .timers = PT_TIMERS_PER_P, .stack_guard = g};
    pt_sched *s = NULL;
    CHECK_EQ(pt_sched_create(&s, &o), 0);
    return s;
}

static uint64_t stacks_live(pt_sched *s)
{
    pt_sched_stats st;
    pt_sched_read_stats(s, &st);
    return st.stacks_guard_region + st.stacks_guard_page + st.stacks_canary;
}

static long max_map_count(void)
{
    long max = 0;
    FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
    CHECK(f != NULL);
    CHECK_EQ(fscanf(f, "%ld", &max), 1);
    fclose(f);
    return max;
}

/* ---- many parked Gs ----------------------------------------------------------- */

struct herd {
    pt_chan *gate;        /* closed to let them all go */
    _Atomic long parked;  /* Gs about to wait on the gate */
    _Atomic long done;
};

static void herd_g(void *arg)
{
    struct herd *h = arg;
    atomic_fetch_add(&h->parked, 1);
    char b;
    CHECK_EQ(pt_chan_recv(h->gate, &b), 0); /* closed */
    atomic_fetch_add(&h->done, 1);
}

/* n Gs started from outside, each parked on a channel until it closes. */
static void park_herd(pt_sched *s, struct herd *h, long n)
{
    memset(h, 0, sizeof *h);
    CHECK_EQ(pt_chan_make(&h->gate, 1, 0), 0);
    for (long i = 0; i < n; i++)
        CHECK_EQ(pt_go(s, herd_g, h), 0);
    WAIT_FOR(atomic_load(&h->parked) == n);
}

static void release_herd(pt_sched *s, struct herd *h, long n)
{
    CHECK_EQ(pt_chan_close(h->gate), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&h->done), n);
    CHECK_EQ(pt_chan_free(h->gate), 0);
}

/* 100k Gs parked at once in each mode: with PT_STACK_GUARD_PAGES (what a
 * kernel before 6.13 gets) the first eighth of vm.max_map_count get guard
 * pages and the rest canaries, where one mapping per stack would have
 * stopped at 32k. */
void test_a_hundred_thousand_gs_park_at_once_in_every_stack_mode(void)
{
    const long n = GS_AT_ONCE(100000);
    for (int k = 0; k < 3; k++) {
        pt_sched *s = make_guarded(2, guards[k]);
        struct herd h;
        park_herd(s, &h, n);
        pt_sched_stats st;
        pt_sched_read_stats(s, &st);
        CHECK(stacks_live(s) >= (uint64_t)n);
        CHECK(st.stack_reservations >= 1 && st.stack_reservations < (uint64_t)n / 100 + 4);
        if (guards[k] == PT_STACK_GUARD_CANARY)
            CHECK_EQ(st.stacks_guard_region + st.stacks_guard_page, 0);
        if (guards[k] == PT_STACK_GUARD_PAGES) {
            /* guard pages up to the process's cap, then canaries */
            CHECK_EQ(st.stacks_guard_region, 0);
            CHECK(st.stacks_guard_page <= (uint64_t)max_map_count() / 8);
            if ((uint64_t)n > (uint64_t)max_map_count() / 8)
                CHECK(st.stacks_canary > 0);
        }
        if (guards[k] == PT_STACK_GUARD_AUTO && pt__stack_guard_regions())
            CHECK_EQ(st.stacks_guard_page + st.stacks_canary, 0);
        release_herd(s, &h, n);
        CHECK_EQ(pt_sched_destroy(s), 0);
        fprintf(stderr, "%s: %ld parked; stacks: %llu region, %llu page, %llu canary; %llu "
                        "reservations\n",
                guard_names[k], n, (unsigned long long)st.stacks_guard_region,
                (unsigned long long)st.stacks_guard_page, (unsigned long long)st.stacks_canary,
                (unsigned long long)st.stack_reservations);
    }
}

/* The environment variable overrides the option: a test suite or a user
 * forces a path without rebuilding. */
void test_pt_stack_guard_in_the_environment_forces_the_mode(void)
{
    CHECK_EQ(setenv("PT_STACK_GUARD", "canary", 1), 0);
    pt_sched *s = make_guarded(1, PT_STACK_GUARD_AUTO);
    struct herd h;
    park_herd(s, &h, 10);
    pt_sched_stats st;
    pt_sched_read_stats(s, &st);
    CHECK(st.stacks_canary >= 10);
    CHECK_EQ(st.stacks_guard_region + st.stacks_guard_page, 0);
    release_herd(s, &h, 10);
    CHECK_EQ(pt_sched_destroy(s), 0);

    CHECK_EQ(setenv("PT_STACK_GUARD", "pages", 1), 0);
    s = make_guarded(1, PT_STACK_GUARD_CANARY);
    park_herd(s, &h, 10);
    pt_sched_read_stats(s, &st);
    CHECK_EQ(st.stacks_guard_region, 0);
    CHECK(st.stacks_guard_page + st.stacks_canary >= 10);
    release_herd(s, &h, 10);
    CHECK_EQ(pt_sched_destroy(s), 0);
    CHECK_EQ(unsetenv("PT_STACK_GUARD"), 0);
}

/* PT_STACK_REGIONS=0, read before the process's first stack: the
 * automatic choice is a kernel's before 6.13, PROT_NONE pages for the
 * first 256 stacks and canaries after, on whatever kernel runs this. */
void test_pt_stack_regions_0_takes_the_old_kernels_path(void)
{
    CHECK_EQ(setenv("PT_STACK_REGIONS", "0", 1), 0);
    pt_sched *s = make_guarded(1, PT_STACK_GUARD_AUTO);
    struct herd h;
    park_herd(s, &h, 300);
    pt_sched_stats st;
    pt_sched_read_stats(s, &st);
    CHECK_EQ(st.stacks_guard_region, 0);
    CHECK(st.stacks_guard_page > 0 && st.stacks_guard_page <= 256);
    CHECK(st.stacks_canary >= 300 - st.stacks_guard_page);
    release_herd(s, &h, 300);
    CHECK_EQ(pt_sched_destroy(s), 0);
    CHECK_EQ(unsetenv("PT_STACK_REGIONS"), 0);
}

static long rss_pages(void)
{
    long size = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "re");
    CHECK(f != NULL);
    CHECK_EQ(fscanf(f, "%ld %ld", &size, &rss), 2);
    fclose(f);
    return rss;
}

/* ---- reuse and return ----------------------------------------------------------- */

/* A finished G's stack is the next G's: a second herd as large as the
 * first makes no new stack. Once nothing starts Gs for a while, the
 * monitor frees the pooled ones but for what the pools keep: their pages
 * go back to the kernel, and a reservation left empty is unmapped. */
void test_stacks_are_reused_and_given_back_when_idle(void)
{
    const long n = SCALE(20000);
    pt_sched *s = make_guarded(2, PT_STACK_GUARD_AUTO);
    struct herd h;
    park_herd(s, &h, n);
    release_herd(s, &h, n);
    pt_sched_stats first;
    pt_sched_read_stats(s, &first);
    uint64_t made = stacks_live(s);
    CHECK(made >= (uint64_t)n);

    park_herd(s, &h, n);
    long rss_peak = rss_pages();
    /* the Ps' own pools (PT__G_POOL_LOCAL each) are out of reach of a
     * thread that is not a G: all else is reused */
    CHECK(stacks_live(s) <= made + 2 * PT__G_POOL_LOCAL);
    release_herd(s, &h, n);

    /* Idle now: within a few of the monitor's periods the pool is trimmed
     * to what it keeps, and the emptied reservations are unmapped. */
    WAIT_FOR(stacks_live(s) <= 1024 + 64 * 2);
    /* their pages back to the kernel: the process shrinks by at least
     * half the page each freed G held, and no reservation is added */
    long rss_after = rss_pages();
#ifndef PT__TSAN
    CHECK(rss_peak - rss_after >= (long)(made - stacks_live(s)) / 2);
#else
    /* not under TSan: its own memory (shadow, traces) grows by more than
     * the freed stacks give back while the monitor trims; this passed
     * there only while each freed G also freed a TSan thread state */
    (void)rss_peak, (void)rss_after;
#endif
    pt_sched_stats after;
    pt_sched_read_stats(s, &after);
    CHECK(after.stack_reservations <= first.stack_reservations);
    /* and it still starts Gs */
    park_herd(s, &h, 100);
    release_herd(s, &h, 100);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

/* ---- overflow ------------------------------------------------------------------- */

static volatile size_t depth_limit = SIZE_MAX; /* never reached: defeats -Winfinite-recursion */

/* Frames of about 600 bytes, each touching both ends and yielding, as a
 * recursive parser in a server might: a canary is checked at the yield. */
static __attribute__((noinline)) size_t recurse_yielding(size_t n)
{
    volatile char pad[512];
    pad[0] = (char)n;
    pad[sizeof pad - 1] = (char)n;
    pt_yield();
    if (n >= depth_limit)
        return n;
    return recurse_yielding(n + 1) + (size_t)pad[0];
}

static void overflow_g(void *arg)
{
    (void)arg;
    recurse_yielding(0);
}

/* The child's status, and what it wrote to stderr. */
__attribute__((unused)) static int overflow_child(enum pt_stack_guard g, char *msg, size_t cap)
{
    pt_sched_options o = {.procs = 1, .timers = PT_TIMERS_PER_P, .stack_size = 16 * 1024,
                          .stack_guard = g};
    return sched_run_in_child(&o, overflow_g, NULL, msg, cap);
}

/* Recursing past its stack, a G is stopped with a message that names
 * it -- by its guard's fault, which the scheduler's handler tells from
 * any other (auto, pages: the process's first stacks get PROT_NONE
 * pages), or by a switch that finds it past its end (canary) -- never by
 * running on over its neighbours. */
static void overflowing_g_is_named(int k)
{
#ifdef PT__TSAN
    (void)k;
    SKIP("ThreadSanitizer's own SIGSEGV handling and fork() with threads make it moot there");
#else
    char msg[4096];
    int status = overflow_child(guards[k], msg, sizeof msg);
#ifdef PT__SANITIZED
    /* ASan's frames are larger and its SIGSEGV handler (ours is not
     * installed there) runs on the spent stack: it dies, not always by
     * our abort */
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
    return;
#endif
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
        fprintf(stderr, "%s: status %#x; the child wrote:\n%.2000s\n", guard_names[k], status,
                msg);
    CHECK(WIFSIGNALED(status));
    CHECK_EQ(WTERMSIG(status), SIGABRT);
    CHECK(strstr(msg, "overflowed its stack") != NULL);
    CHECK(strstr(msg, "corrupt G") != NULL && strstr(msg, "(id ") != NULL);
    CHECK(strstr(msg, guards[k] == PT_STACK_GUARD_CANARY ? "a switch" : "a fault") != NULL);
#endif
}

void test_an_overflowing_g_is_named_with_guard_auto(void)
{
    overflowing_g_is_named(0);
}

void test_an_overflowing_g_is_named_with_guard_pages(void)
{
    overflowing_g_is_named(1);
}

void test_an_overflowing_g_is_named_with_guard_canary(void)
{
    overflowing_g_is_named(2);
}

/* A fault that is not a G's overflow is the process's as before: a
 * thread off the scheduler writing to a PROT_NONE page dies by SIGSEGV
 * (the default put back), though the scheduler's handler is installed. */
__attribute__((unused)) static void fault_off_an_m(void *arg)
{
    (void)arg;
    char *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    *(volatile char *)p = 1;
}

__attribute__((unused)) static void *fault_thread(void *arg)
{
    fault_off_an_m(arg);
    return NULL;
}

__attribute__((unused)) static void fault_elsewhere(void *arg)
{
    (void)arg;
    pthread_t th; /* a thread of the process's own, no M */
    CHECK_EQ(pthread_create(&th, NULL, fault_thread, NULL), 0);
    pthread_join(th, NULL);
}

void test_a_fault_that_is_no_overflow_still_kills_by_its_signal(void)
{
#if defined(PT__TSAN) || defined(PT__SANITIZED)
    SKIP("the sanitizers report faults themselves");
#else
    char msg[4096];
    pt_sched_options o = {.procs = 1, .timers = PT_TIMERS_PER_P};
    int status = sched_run_in_child(&o, fault_elsewhere, NULL, msg, sizeof msg);
    CHECK(WIFSIGNALED(status));
    CHECK_EQ(WTERMSIG(status), SIGSEGV);
    CHECK(strstr(msg, "corrupt G") == NULL);
    /* and on an M, a G's fault away from its guard */
    status = sched_run_in_child(&o, fault_off_an_m, NULL, msg, sizeof msg);
    CHECK(WIFSIGNALED(status));
    CHECK_EQ(WTERMSIG(status), SIGSEGV);
    CHECK(strstr(msg, "corrupt G") == NULL);
#endif
}

/* Down to `until`, a frame at a time, and back: the frames below the
 * stack's end written, none of them at a switch. */
__attribute__((unused, noinline)) static void dive(char *until)
{
    volatile char pad[256];
    pad[0] = 1;
    pad[sizeof pad - 1] = 1;
    if ((char *)pad > until)
        dive(until);
    pad[1] = pad[0]; /* after the call: no tail call */
}

__attribute__((unused)) static void overflow_and_back(void *arg)
{
    (void)arg;
    pt_g *g = pt_g_current();
    dive((char *)g->stack.lo - 1024); /* into the page below, short of the next stack */
    /* running on, far from its end: no switch looks */
    for (pt_nanos end = pt_nanotime() + 10 * SEC; pt_nanotime() < end;)
        pt_yield();
}

/* A canary G that overflowed and came back before its next switch, then
 * ran on: the monitor's look at the guard pages catches it, naming it,
 * within its round of them (100 ms here). Without the look the child
 * would end by the check of a stack as it is freed, at destroy. */
void test_an_overflow_that_came_back_is_caught_by_the_monitor(void)
{
#if defined(PT__TSAN) || defined(PT__SANITIZED)
    SKIP("the sanitizers keep frames of their own and fork() with threads is TSan's to refuse");
#else
    char msg[4096];
    pt_sched_options o = {.procs = 1, .timers = PT_TIMERS_PER_P, .stack_size = 16 * 1024,
                          .stack_guard = PT_STACK_GUARD_CANARY};
    int status = sched_run_in_child(&o, overflow_and_back, NULL, msg, sizeof msg);
    if (!WIFSIGNALED(status))
        fprintf(stderr, "status %#x; the child wrote:\n%.2000s\n", status, msg);
    CHECK(WIFSIGNALED(status));
    CHECK_EQ(WTERMSIG(status), SIGABRT);
    CHECK(strstr(msg, "the monitor's look") != NULL);
    CHECK(strstr(msg, "corrupt G") != NULL && strstr(msg, "(id ") != NULL);
#endif
}

/* ---- bad input and exhaustion -------------------------------------------------- */

void test_bad_stack_options_are_refused(void)
{
    pt_sched *s = NULL;
    pt_sched_options o = {.procs = 1, .stack_size = ((size_t)1 << 30) + 1};
    CHECK_EQ(pt_sched_create(&s, &o), -EINVAL);
    o.stack_size = SIZE_MAX;
    CHECK_EQ(pt_sched_create(&s, &o), -EINVAL);
    o.stack_size = 0;
    o.stack_guard = (enum pt_stack_guard)3;
    CHECK_EQ(pt_sched_create(&s, &o), -EINVAL);
    o.stack_guard = (enum pt_stack_guard)-1;
    CHECK_EQ(pt_sched_create(&s, &o), -EINVAL);
    CHECK(s == NULL);
    o.stack_guard = PT_STACK_GUARD_AUTO;
    CHECK_EQ(setenv("PT_STACK_GUARD", "guarded", 1), 0);
    CHECK_EQ(pt_sched_create(&s, &o), -EINVAL);
    CHECK(s == NULL);
    CHECK_EQ(unsetenv("PT_STACK_GUARD"), 0);
    /* 1 GiB exactly is a stack a reservation holds */
    o.stack_size = (size_t)1 << 30;
    CHECK_EQ(pt_sched_create(&s, &o), 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

/* A stack that cannot be had (an injected failure) is -ENOMEM from pt_go,
 * with nothing counted, and the next pt_go works. */
void test_a_stack_that_cannot_be_had_is_enomem_and_the_next_works(void)
{
    pt_sched *s = make_guarded(1, PT_STACK_GUARD_AUTO);
    struct herd h;
    park_herd(s, &h, 4); /* the pool is empty: these are fresh */
    uint64_t live = stacks_live(s);
    pt__alloc_fail_after(0);
    CHECK_EQ(pt_go(s, herd_g, &h), -ENOMEM);
    CHECK(!pt__alloc_fail_armed());
    CHECK_EQ(stacks_live(s), live);
    CHECK_EQ(pt_go(s, herd_g, &h), 0);
    WAIT_FOR(atomic_load(&h.parked) == 5);
    release_herd(s, &h, 5);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

/* Out of address space for real (RLIMIT_AS, in a child): pt_go says
 * -ENOMEM, the Gs it made run to the end, and it starts Gs again once
 * they have. Not under ASan, whose shadow the limit would refuse. */
void test_running_out_of_address_space_leaves_the_scheduler_usable(void)
{
#ifdef PT__SANITIZED
    SKIP("a sanitizer's shadow memory needs the address space this test takes away");
#else
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        pt_sched *s = make_guarded(1, PT_STACK_GUARD_AUTO);
        struct rlimit rl = {.rlim_cur = 0, .rlim_max = RLIM_INFINITY};
        /* what the process has now, plus room for a few reservations */
        FILE *f = fopen("/proc/self/statm", "re");
        unsigned long pages = 0;
        CHECK(f && fscanf(f, "%lu", &pages) == 1);
        fclose(f);
        rl.rlim_cur = pages * (unsigned long)sysconf(_SC_PAGESIZE) + ((rlim_t)300 << 20);
        CHECK_EQ(setrlimit(RLIMIT_AS, &rl), 0);
        struct herd h;
        memset(&h, 0, sizeof h);
        CHECK_EQ(pt_chan_make(&h.gate, 1, 0), 0);
        long n = 0;
        int rc;
        while ((rc = pt_go(s, herd_g, &h)) == 0)
            n++;
        CHECK_EQ(rc, -ENOMEM);
        CHECK(n > 1000);
        WAIT_FOR(atomic_load(&h.parked) == n);
        release_herd(s, &h, n);
        memset(&h, 0, sizeof h);
        park_herd(s, &h, 100);
        release_herd(s, &h, 100);
        CHECK_EQ(pt_sched_destroy(s), 0);
        _exit(0);
    }
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
#endif
}
