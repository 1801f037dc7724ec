/* ptstress's machine-stall witness (stress/witness.c): a lateness
 * check allows for a stall of the whole process that the witness saw
 * between the deadline and the check, and for nothing else. The stall is
 * made for real: a child stops this process (SIGSTOP) and resumes it. */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "stress.h"

#define MS ((pt_nanos)1000000)
#define STOP_MS 150
#define ALLOWED (10 * MS) /* a check's own allowance for lateness */

/* Stops this process for about STOP_MS, from a child, and returns once it
 * runs again. */
static void stop_this_process(void)
{
    pid_t parent = getpid(), child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        struct timespec ts = {0, STOP_MS * 1000000L};
        kill(parent, SIGSTOP);
        nanosleep(&ts, NULL);
        kill(parent, SIGCONT);
        _exit(0);
    }
    int st;
    CHECK(waitpid(child, &st, 0) == child);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

void test_a_lateness_the_machines_stall_explains_is_excused_and_no_other(void)
{
    struct stress_opts o = {0}; /* no window: --slack 0 */
    struct stress_run r = {.o = &o};
    witness_start();
    witness_tally_begin();
    pt_nanos due = pt_nanotime();
    stop_this_process();
    /* The witness wakes from its sleep once the process runs again; its
     * record of the stall follows within a few of its sleeps. */
    pt_nanos longest = 0, give_up = pt_nanotime() + 5000 * MS;
    while ((witness_tally(&longest), longest < (STOP_MS - 20) * MS) && pt_nanotime() < give_up) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    pt_nanos at = pt_nanotime();
    CHECK(longest >= (STOP_MS - 20) * MS);
    CHECK(witness_tally(&longest) >= 1);
    pt_nanos stalled = witness_stalled(due, at);
    CHECK(stalled >= (STOP_MS - 20) * MS);
    CHECK(stalled <= at - due);

    /* Late past a 10 ms allowance by less than the stall: excused, and
     * counted as such. The window is the witness's own record of the
     * stall and a little after it, less than the allowance: from `due` to
     * `at` it would also hold the fork, the wait for the child to get a
     * CPU and the look after the stall, whose length a loaded machine
     * decides. */
    pt_nanos stall_end, over = witness_gap(due, at, &stall_end);
    CHECK(over >= (STOP_MS - 20) * MS);
    CHECK(!stress_overdue(&r, stall_end - over, stall_end + ALLOWED / 2, ALLOWED));
    CHECK_EQ(atomic_load(&r.excused), 1);
    /* Late by more than the allowance and the stall together: overdue. */
    CHECK(stress_overdue(&r, due - 2 * stalled, at, ALLOWED));
    /* The same lateness in a window the stall is not in (one still to
     * come): overdue, the stall explains nothing after it. */
    CHECK(stress_overdue(&r, at + 1000 * MS, at + 1000 * MS + (at - due), ALLOWED));
    /* Within the allowance: never overdue, and no excuse needed. */
    CHECK(!stress_overdue(&r, due, due + ALLOWED, ALLOWED));
    CHECK_EQ(atomic_load(&r.excused), 1);
    witness_stop();
    /* A new run's tally starts empty: the stall was the last run's. The
     * witness is stopped, so nothing can land between the two calls. */
    witness_tally_begin();
    pt_nanos none;
    CHECK_EQ(witness_tally(&none), 0);
    CHECK_EQ(none, 0);
}

/* The run's own pauses (pool.c holds every mutator for a quiescent check):
 * a lateness they explain is allowed, as the run's own stall, and is not
 * the machine's (not excused); one outside them is not. */
void test_a_lateness_the_runs_own_pause_explains_is_allowed_and_not_excused(void)
{
    struct stress_opts o = {0}; /* no window: --slack 0 */
    struct stress_run r = {.o = &o};
    pt_nanos due = pt_nanotime();
    witness_pause_begin();
    pt_nanos from = pt_nanotime();
    while (pt_nanotime() - from < 3 * ALLOWED) /* the pause: held for a measured span */
        ;
    witness_pause_end();
    pt_nanos at = pt_nanotime();
    pt_nanos paused = witness_paused(due, at);
    CHECK(paused >= 3 * ALLOWED);
    CHECK(paused <= at - due);
    /* late by the pause and half the allowance: allowed, not excused */
    CHECK(!stress_overdue(&r, due, due + paused + ALLOWED / 2, ALLOWED));
    CHECK_EQ(atomic_load(&r.excused), 0);
    /* the same lateness after the pause: overdue */
    CHECK(stress_overdue(&r, at + 1, at + 1 + paused + ALLOWED / 2, ALLOWED));
    /* a pause under way counts up to the reader's time */
    witness_pause_begin();
    pt_nanos t = pt_nanotime();
    CHECK(witness_paused(t, t + 5 * ALLOWED) >= 4 * ALLOWED);
    witness_pause_end();
}
