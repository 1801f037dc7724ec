/* A G's TSan fiber is kept from one G to the next and across schedulers
 * (sched/fiber.c): what that must not cost. TSan still reports a race
 * between two Gs, with no frame of an earlier G on the fibers' shadow
 * stacks; and many schedulers of many Gs in one process, a test suite's
 * shape, run without a TSan thread state per G. */
#include <errno.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>

#include "sched/sanitizer.h" /* PT__TSAN */
#include "util.h"

extern char **environ;

/* ---- many schedulers of many Gs in one process ------------------------- */

#define SCHEDS 30
#define GS 1000

static atomic_long leaves_ran;

static void leaf(void *wg)
{
    atomic_fetch_add(&leaves_ran, 1);
    CHECK_EQ(pt_wg_done(wg), 0);
}

/* All GS Gs started before any may finish (the wait group holds them
 * until the last is started), so each scheduler needs GS fibers. */
static void start_many(void *arg)
{
    (void)arg;
    pt_wg wg;
    CHECK_EQ(pt_wg_init(&wg), 0);
    CHECK_EQ(pt_wg_add(&wg, GS), 0);
    for (int i = 0; i < GS; i++)
        CHECK_EQ(pt_go(NULL, leaf, &wg), 0);
    CHECK_EQ(pt_wg_wait(&wg), 0);
}

/* Under TSan this was 30,000 TSan thread states created and destroyed
 * (milliseconds each on this machine: minutes in all); with the fibers
 * kept it is about a thousand created once. ctest's TIMEOUT for this test
 * (test/CMakeLists.txt, 300 s) is the bound that tells the two apart on a
 * loaded 2-core machine: a hang bound, not a speed goal (ptbench's
 * sched-run row under the TSan build is that). */
void test_thirty_schedulers_of_a_thousand_gs_in_one_process(void)
{
    atomic_store(&leaves_ran, 0);
    for (int i = 0; i < SCHEDS; i++)
        CHECK_EQ(pt_sched_run(&(pt_sched_options){.procs = 2}, start_many, NULL), 0);
    CHECK_EQ(atomic_load(&leaves_ran), (long)SCHEDS * GS);
}

/* ---- a seeded race between two Gs, reported --------------------------- */

#ifdef PT__TSAN
static long racy; /* written by two Gs with nothing ordering them: the seeded race */
static atomic_int arrived;

/* Meets the other racer with relaxed atomics (which order nothing in
 * TSan's eyes), so both write while running at once on two Ms. */
static __attribute__((noinline)) void seeded_racer(void *arg)
{
    (void)arg;
    atomic_fetch_add_explicit(&arrived, 1, memory_order_relaxed);
    while (atomic_load_explicit(&arrived, memory_order_relaxed) < 2)
        ;
    for (int i = 0; i < 1000; i++)
        ((volatile long *)&racy)[0]++;
}

static void race_after_reuse(void *arg)
{
    (void)arg;
    /* first many G lives on the fibers the racers will reuse: a frame
     * left open by each would show in the report's stacks */
    start_many(NULL);
    CHECK_EQ(pt_go(NULL, seeded_racer, NULL), 0);
    CHECK_EQ(pt_go(NULL, seeded_racer, NULL), 0);
}

#define RACE_CHILD "PT_TEST_SEEDED_RACE"

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

#endif

void test_tsan_reports_a_seeded_race_between_two_gs_on_reused_fibers(void)
{
#ifndef PT__TSAN
    SKIP("the race is for ThreadSanitizer to report: this build has none");
#else
    if (getenv(RACE_CHILD)) { /* the child: race, and let TSan say so */
        CHECK_EQ(pt_sched_run(&(pt_sched_options){.procs = 2}, race_after_reuse, NULL), 0);
        exit(0);
    }
    /* a fresh process (exec, not fork: TSan forbids a fork with threads
     * going on to start threads), its stderr kept */
    char path[] = "/tmp/pt-race-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
    posix_spawn_file_actions_t fa;
    CHECK_EQ(posix_spawn_file_actions_init(&fa), 0);
    CHECK_EQ(posix_spawn_file_actions_adddup2(&fa, fd, 2), 0);
    CHECK_EQ(setenv(RACE_CHILD, "1", 1), 0);
    char *args[] = {"test_sched", "tsan_reports_a_seeded_race_between_two_gs_on_reused_fibers",
                    NULL};
    pid_t pid;
    CHECK_EQ(posix_spawn(&pid, "/proc/self/exe", &fa, NULL, args, environ), 0);
    CHECK_EQ(unsetenv(RACE_CHILD), 0);
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    static char err[1 << 16];
    ssize_t n = pread(fd, err, sizeof err - 1, 0);
    CHECK(n >= 0);
    err[n] = 0;
    close(fd);
    if (!strstr(err, "ThreadSanitizer: data race") || !strstr(err, "seeded_racer")) {
        fprintf(stderr, "expected TSan to report a race in seeded_racer; the child said:\n%s\n",
                err);
        CHECK(!"no race reported");
    }
    /* The two access stacks are seeded_racer, g_run and g_entry (TSan
     * records each frame by its caller's PC, so the frameless g_entry
     * shows as g_run's caller): nothing below them, where a frame left
     * open by an earlier G on the same fiber would be. */
    char *acc = strstr(err, "ThreadSanitizer: data race");
    char *end = acc ? strstr(acc, "Location is") : NULL;
    CHECK(end != NULL);
    *end = 0;
    if (count(acc, "#2 g_entry") != 2 || strstr(acc, "#3 ")) {
        fprintf(stderr, "expected both access stacks to end at g_entry:\n%s\n", acc);
        CHECK(!"a stale frame on a reused fiber");
    }
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
#endif
}
