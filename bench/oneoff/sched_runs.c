/* ptbench-sched-runs: what a program's tests pay for the scheduler in
 * the build they are built in -- the ThreadSanitizer build above all,
 * where every G used to bring a TSan thread state of its own (a vector
 * clock zeroed in fresh memory, unmapped again at its end). Two rows,
 * each the median of its runs, and the process's peak resident memory:
 *   - a scheduler run of 100 Gs: pt_sched_run at 2 Ps, whose first G
 *     starts 100 that each finish at once, from create to destroy;
 *   - 10,000 G starts: one G starts 10,000 that finish at once, at 2 Ps.
 * Run it from the build in question (build-thread/bench/ for TSan). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

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

int main(void)
{
    /* the first run pays what a process pays once (threads, pools) */
    double first = median_ms(100, 1);
    double run100 = median_ms(100, RUNS_100);
    double start10k = median_ms(10000, RUNS_10K);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("| row | median | runs |\n|---|---|---|\n");
    printf("| first scheduler run of 100 Gs | %.1f ms | 1 |\n", first);
    printf("| scheduler run of 100 Gs | %.1f ms | %d |\n", run100, RUNS_100);
    printf("| 10,000 G starts (one scheduler run) | %.0f ms | %d |\n", start10k, RUNS_10K);
    printf("| peak resident memory | %.0f MB | |\n", (double)ru.ru_maxrss / 1024);
    return 0;
}
