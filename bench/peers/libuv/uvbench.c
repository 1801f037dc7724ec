/* ptbench's libuv peer: the single-thread workloads on libuv's timer heap
 * (a binary heap of uv_timer_t per loop, millisecond resolution). Prints
 * one JSON line per repetition, in ptbench's peer format. Timers are
 * embedded uv_timer_t, started and stopped as libuv's users do; the clock
 * is read once per arm like every other design (uv_update_time here, which
 * is what makes libuv's "now" move). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "rng.h" /* bench/workloads: the same generator as ours */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) { return pt__xorshift64(&rng); }

static void noop(uv_timer_t *t) { (void)t; }

/* latency: lateness samples, ns */
static int64_t *lat;
static size_t nlat, caplat;
static int64_t deadline_ns;
static void on_late(uv_timer_t *t)
{
    if (nlat < caplat)
        lat[nlat++] = now_ns() - deadline_ns;
    /* Return from uv_run now: the timer may fire before the loop's poll,
     * which would then sleep until the next (hour-away) timer. */
    uv_stop(t->loop);
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static long rss(void)
{
    /* resident less shared pages: as ptbench counts its own designs' */
    long pages = 0, res = 0, shared = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld %ld", &pages, &res, &shared) != 3)
            res = shared = 0;
        fclose(f);
    }
    return (res - shared) * sysconf(_SC_PAGESIZE);
}

int main(int argc, char **argv)
{
    const char *wl = "rpc";
    int reps = 3, preload = 32768, window = 10000;
    long timeout_ms = 100;                                   /* rpc, rpc-pending: each timer's */
    long duration_ms = 300, ops_limit = 0, timers = 1000000; /* memory's */
    const char *quantiles = NULL;
    for (int i = 1; i < argc; i++) {
        if (strchr(argv[i], '=') || i + 1 == argc)
            continue; /* -flag=value: nothing here takes that form */
        if (!strcmp(argv[i], "-quantiles"))
            quantiles = argv[i + 1];
        else if (!strcmp(argv[i], "-workload"))
            wl = argv[i + 1];
        else if (!strcmp(argv[i], "-reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-duration-ms"))
            duration_ms = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-ops"))
            ops_limit = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-preload"))
            preload = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-window"))
            window = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-timeout-ms"))
            timeout_ms = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-timers"))
            timers = atol(argv[i + 1]);
        else
            continue;
        i++;
    }
    for (int r = 0; r < reps; r++) {
        uv_loop_t loop;
        uv_loop_init(&loop);
        uv_timer_t *pre = calloc((size_t)preload + 1, sizeof *pre);
        for (int i = 0; i < preload; i++) {
            uv_timer_init(&loop, &pre[i]);
            uv_timer_start(&pre[i], noop, 3600000 + rnd() % 1000, 0);
        }
        uint64_t ops = 0;
        double bytes = 0, create_ns = 0, cancel_ns = 0;
        nlat = 0;
        int64_t end = now_ns() + duration_ms * 1000000;
        double c0 = cpu_s();
        int64_t t0 = now_ns();
        /* sleeping loops look at the clock every op, fast ones every 256 */
        uint64_t mask = strncmp(wl, "latency", 7) == 0 ? 0 : 255;
#define DONE() (ops_limit ? (long)ops >= ops_limit : ((ops & mask) == 0 && now_ns() >= end))
        uv_timer_t t; /* the one-timer workloads' timer, closed below */
        uv_timer_init(&loop, &t);
        if (!strcmp(wl, "rpc")) {
            while (!DONE()) {
                uv_update_time(&loop);
                uv_timer_start(&t, noop, (uint64_t)timeout_ms + rnd() % 2, 0);
                uv_timer_stop(&t);
                ops++;
            }
        } else if (!strcmp(wl, "rpc-pending")) {
            uv_timer_t *ring = calloc((size_t)window, sizeof *ring);
            for (int i = 0; i < window; i++)
                uv_timer_init(&loop, &ring[i]);
            for (int i = 0; !DONE(); i = (i + 1) % window) {
                uv_update_time(&loop);
                uv_timer_stop(&ring[i]);
                uv_timer_start(&ring[i], noop, (uint64_t)timeout_ms + rnd() % 2, 0);
                ops++;
            }
            for (int i = 0; i < window; i++)
                uv_close((uv_handle_t *)&ring[i], NULL);
            uv_run(&loop, UV_RUN_NOWAIT);
            free(ring);
        } else if (!strcmp(wl, "reset")) {
            enum { K = 1000 };
            uv_timer_t *k = calloc(K, sizeof *k);
            for (int i = 0; i < K; i++) {
                uv_timer_init(&loop, &k[i]);
                uv_timer_start(&k[i], noop, 1000 + rnd() % 1000, 0);
            }
            while (!DONE()) {
                uv_update_time(&loop);
                uv_timer_start(&k[rnd() % K], noop, 1000 + rnd() % 1000, 0); /* restarts */
                ops++;
            }
            for (int i = 0; i < K; i++)
                uv_close((uv_handle_t *)&k[i], NULL);
            uv_run(&loop, UV_RUN_NOWAIT);
            free(k);
        } else if (!strncmp(wl, "latency", 7)) {
            caplat = 1 << 20;
            lat = realloc(lat, caplat * sizeof *lat);
            while (!DONE()) {
                /* libuv's resolution is 1 ms: ask for 300 us - 1 ms, get 1 ms */
                int64_t ahead = 300000 + (int64_t)(rnd() % 700000);
                uv_update_time(&loop);
                deadline_ns = now_ns() + ahead;
                uv_timer_start(&t, on_late, (ahead + 999999) / 1000000, 0);
                uv_run(&loop, UV_RUN_DEFAULT);
                ops++;
            }
        } else if (!strcmp(wl, "memory")) {
            const long N = timers > 0 ? timers : 1;
            for (int i = 0; i < preload; i++)
                uv_timer_stop(&pre[i]);
            long before = rss();
            int64_t a = now_ns();
            uv_timer_t *m = malloc((size_t)N * sizeof *m);
            for (int i = 0; i < N; i++) {
                uv_timer_init(&loop, &m[i]);
                uv_timer_start(&m[i], noop, 3600000 + (uint64_t)i, 0);
            }
            int64_t b = now_ns();
            long after = rss();
            for (int i = 0; i < N; i++)
                uv_timer_stop(&m[i]);
            int64_t c = now_ns();
            bytes = (double)(after - before) / N;
            create_ns = (double)(b - a) / N;
            cancel_ns = (double)(c - b) / N;
            ops = N;
            for (int i = 0; i < N; i++)
                uv_close((uv_handle_t *)&m[i], NULL);
            uv_run(&loop, UV_RUN_NOWAIT);
            free(m);
        } else {
            fprintf(stderr, "uvbench: no workload %s\n", wl);
            return 2;
        }
        int64_t elapsed = now_ns() - t0;
        double cpu = cpu_s() - c0;
        double p50 = 0, p99 = 0, p999 = 0, mx = 0;
        if (nlat) {
            qsort(lat, nlat, sizeof *lat, cmp64);
            /* The rank ptbench's histogram and the Go peer use. */
            p50 = (double)lat[(size_t)(0.5 * (double)(nlat - 1))];
            p99 = (double)lat[(size_t)(0.99 * (double)(nlat - 1))];
            p999 = (double)lat[(size_t)(0.999 * (double)(nlat - 1))];
            mx = (double)lat[nlat - 1];
        }
        printf("{\"design\":\"libuv\",\"workload\":\"%s\",\"threads\":1,\"ops\":%llu,"
               "\"elapsed_ns\":%lld,\"cpu_s\":%.4f,\"wakeups\":0,\"lat_p50_ns\":%.0f,"
               "\"lat_p99_ns\":%.0f,\"lat_p999_ns\":%.0f,\"lat_max_ns\":%.0f,"
               "\"bytes_per_timer\":%.2f,\"create_ns\":%.2f,\"cancel_ns\":%.2f,\"rss_bytes\":%ld",
               wl, (unsigned long long)ops, (long long)elapsed, cpu, p50, p99, p999, mx, bytes,
               create_ns, cancel_ns, rss());
        if (quantiles && nlat) { /* the same quantiles ptbench samples its designs at */
            const char *q = quantiles;
            printf(",\"lat_q_ns\":[");
            for (int k = 0; *q; k++) {
                char *qend;
                double p = strtod(q, &qend);
                if (qend == q || p < 0 || p > 1) {
                    fprintf(stderr, "uvbench: bad quantile list '%s'\n", quantiles);
                    return 2;
                }
                size_t at = (size_t)(p * (double)(nlat - 1));
                printf("%s%lld", k ? "," : "", (long long)lat[at]);
                q = *qend == ',' ? qend + 1 : qend;
            }
            printf("]");
        }
        printf("}\n");
        fflush(stdout);
        for (int i = 0; i < preload; i++)
            uv_close((uv_handle_t *)&pre[i], NULL);
        uv_close((uv_handle_t *)&t, NULL);
        uv_run(&loop, UV_RUN_NOWAIT);
        if (uv_loop_close(&loop) != 0) {
            fprintf(stderr, "uvbench: loop still busy after %s\n", wl);
            return 1;
        }
        free(pre);
    }
    free(lat);
    return 0;
}
