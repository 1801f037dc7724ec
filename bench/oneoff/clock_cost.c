/* ptbench-clock: what one pt_nanotime costs on each source, beside the
 * two things it is made of (clock_gettime through the vDSO; lfence +
 * rdtsc), on one thread, in a tight loop and between 50 ns of other work
 * (where an out-of-order core hides part of a read).
 *
 *   build/bench/ptbench-clock [-r reps]     (prints a table: median, min-max)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock_select.h"
#include "ptimer/clock.h"
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

enum { READS = 4000000, WORK_READS = 1000000 };

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t sink[1024];

/* About 50 ns of dependent arithmetic and stores, standing in for a timer
 * operation around the read. */
__attribute__((noinline)) static uint64_t work(uint64_t x)
{
    for (int i = 0; i < 40; i++) {
        x = x * 6364136223846793005ull + 1;
        sink[(x >> 40) & 1023] += x;
    }
    return x;
}

enum reader { R_PT_NANOTIME, R_CLOCK_GETTIME, R_RDTSC };

static inline uint64_t read_one(enum reader r)
{
    if (r == R_PT_NANOTIME)
        return (uint64_t)pt_nanotime();
    if (r == R_CLOCK_GETTIME) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_nsec;
    }
#if defined(__x86_64__)
    _mm_lfence();
    return __rdtsc();
#else
    return 0;
#endif
}

/* ns per read: tight (work = 0), or the loop with work minus work alone */
static double measure(enum reader r, int with_work)
{
    uint64_t s = 1;
    if (!with_work) {
        double t0 = mono();
        for (int i = 0; i < READS; i++)
            s += read_one(r);
        double t1 = mono();
        sink[0] += s;
        return (t1 - t0) / READS;
    }
    double t0 = mono();
    for (int i = 0; i < WORK_READS; i++)
        s = work(s);
    double t1 = mono();
    for (int i = 0; i < WORK_READS; i++)
        s = work(s + read_one(r));
    double t2 = mono();
    sink[0] += s;
    return ((t2 - t1) - (t1 - t0)) / WORK_READS;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void row(const char *name, const char *source, enum reader r, int reps)
{
    double tight[64], between[64];
    if (source != NULL)
        pt__clock_select(source);
    if (r == R_PT_NANOTIME && source != NULL && strcmp(source, "tsc") == 0 &&
        pt_clock_source() != PT_CLOCK_TSC) {
        printf("%-28s  (no TSC here: %d)\n", name, pt_clock_fallback());
        return;
    }
    for (int i = 0; i < reps; i++) {
        tight[i] = measure(r, 0);
        between[i] = measure(r, 1);
    }
    qsort(tight, (size_t)reps, sizeof tight[0], cmp);
    qsort(between, (size_t)reps, sizeof between[0], cmp);
    printf("%-28s  %6.1f (%5.1f-%5.1f)   %6.1f (%5.1f-%5.1f)\n", name, tight[reps / 2], tight[0],
           tight[reps - 1], between[reps / 2], between[0], between[reps - 1]);
}

int main(int argc, char **argv)
{
    int reps = 5;
    if (argc == 3 && strcmp(argv[1], "-r") == 0)
        reps = atoi(argv[2]);
    if (reps < 1 || reps > 64) {
        fprintf(stderr, "usage: ptbench-clock [-r 1..64]\n");
        return 2;
    }
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    printf("ptbench-clock -r %d   (%s, %ld CPUs)\n", reps, host, sysconf(_SC_NPROCESSORS_ONLN));
    printf("ns per read, median (min-max) of %d  tight loop            between 50 ns of work\n",
           reps);
    row("pt_nanotime, PT_CLOCK=tsc", "tsc", R_PT_NANOTIME, reps);
    row("pt_nanotime, PT_CLOCK=monotonic", "monotonic", R_PT_NANOTIME, reps);
    row("clock_gettime(MONOTONIC)", NULL, R_CLOCK_GETTIME, reps);
#if defined(__x86_64__)
    row("lfence; rdtsc", NULL, R_RDTSC, reps);
#endif
    return 0;
}
