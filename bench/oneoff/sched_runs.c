/* ptbench-sched-runs: what a program's tests pay for the scheduler in
 * the build they are built in -- the ThreadSanitizer build above all,
 * where every G used to bring a TSan thread state of its own (a vector
 * clock zeroed in fresh memory, unmapped again at its end). Two rows,
 * each the median of its runs, each in a process of its own with that
 * process's peak resident memory:
 *   - a scheduler run of 100 Gs: pt_sched_run at 2 Ps, whose first G
 *     starts 100 that each finish at once, from create to destroy;
 *   - 10,000 G starts: one G starts 10,000 that finish at once, at 2 Ps;
 *     a process's first such run, then five more in the same process.
 * Run it from the build in question (build-thread/bench/ for TSan). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <spawn.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "ptimer/clock.h"
#include "ptimer/sched.h"

#define RUNS_100 21
#define RUNS_10K 5

static atomic_long finished;

static void leaf(void *arg)
{
    (void)arg;
    atomic_fetch_add_explicit(&finished, 1, memory_order_relaxed);
}

static void start_n(void *arg)
{
    long n = (long)arg;
    for (long i = 0; i < n; i++)
        if (pt_go(NULL, leaf, NULL) != 0) {
            fprintf(stderr, "ptbench-sched-runs: pt_go refused a G\n");
            exit(1);
        }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of `runs` scheduler runs of n Gs, in ms. */
static double median_ms(long n, int runs)
{
    double ms[RUNS_100 > RUNS_10K ? RUNS_100 : RUNS_10K];
    for (int i = 0; i < runs; i++) {
        atomic_store(&finished, 0);
        pt_nanos t0 = pt_nanotime();
        int rc = pt_sched_run(&(pt_sched_options){.procs = 2}, start_n, (void *)n);
        ms[i] = (double)(pt_nanotime() - t0) / 1e6;
        if (rc != 0 || atomic_load(&finished) != n) {
            fprintf(stderr, "ptbench-sched-runs: run %d: rc %d, %ld of %ld Gs finished\n", i, rc,
                    atomic_load(&finished), n);
            exit(1);
        }
    }
    qsort(ms, (size_t)runs, sizeof ms[0], cmp);
    return ms[runs / 2];
}

/* One row, in this process: its figures and the process's peak resident
 * memory, which is then the row's own. */
static void row(const char *which)
{
    struct rusage ru;
    if (strcmp(which, "100") == 0) {
        /* the first run pays what a process pays once (threads, pools) */
        double first = median_ms(100, 1);
        double run100 = median_ms(100, RUNS_100);
        getrusage(RUSAGE_SELF, &ru);
        printf("| first scheduler run of 100 Gs | %.1f ms | 1 | |\n", first);
        printf("| scheduler run of 100 Gs | %.1f ms | %d | %.0f MB |\n", run100, RUNS_100,
               (double)ru.ru_maxrss / 1024);
    } else {
        double start10k = median_ms(10000, 1);
        getrusage(RUSAGE_SELF, &ru);
        double mb1 = (double)ru.ru_maxrss / 1024;
        double again = median_ms(10000, RUNS_10K);
        getrusage(RUSAGE_SELF, &ru);
        printf("| 10,000 G starts, a process's first scheduler run | %.0f ms | 1 | %.0f MB |\n",
               start10k, mb1);
        printf("| 10,000 G starts, %d more runs in the same process | %.0f ms | %d | %.0f MB |\n",
               RUNS_10K, again, RUNS_10K, (double)ru.ru_maxrss / 1024);
    }
}

extern char **environ;

int main(int argc, char **argv)
{
    if (argc > 1) {
        row(argv[1]);
        return 0;
    }
    /* each row in a fresh process of its own (exec: a sanitizer forbids
     * a fork that goes on to start threads), so that its peak resident
     * memory is its own */
    printf("| row | median | runs | peak resident memory |\n|---|---|---|---|\n");
    fflush(stdout);
    const char *rows[] = {"100", "10k"};
    for (int i = 0; i < 2; i++) {
        char *args[] = {argv[0], (char *)rows[i], NULL};
        pid_t pid;
        int st;
        if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, environ) != 0 ||
            waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "ptbench-sched-runs: the %s row failed\n", rows[i]);
            return 1;
        }
    }
    return 0;
}
