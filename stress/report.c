/* ptstress's output: violation lines with the command that reproduces the
 * run, and progress lines for soaks. Tools print; this is the tool. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "stress.h"

const char *const viol_names[V_NKINDS] = {
    [V_DOUBLE] = "double",
    [V_EARLY] = "early",
    [V_LATE] = "late",
    [V_FIRED_STOPPED] = "fired-after-stop",
    [V_FIRED_SUPERSEDED] = "fired-after-reset",
    [V_UNFIRED] = "unfired",
    [V_COUNT] = "count",
    [V_BURST] = "burst",
    [V_PHASE] = "phase",
    [V_TICK_STOPPED] = "tick-after-stop",
    [V_TICKS] = "ticks",
    [V_MEMORY] = "memory",
    [V_LEAK] = "leak",
    [V_INVARIANT] = "invariant",
    [V_SYNC] = "stop-sync-running",
    [V_ERROR] = "error",
    [V_HUNG] = "hung",
    [V_STALL] = "stall",
};

/* Enough to see the pattern; the counts say how many there were. */
#define PRINT_MAX 10

void stress_violation(struct stress_run *r, enum viol_kind k, long timer, uint64_t arming,
                      const char *expected, const char *observed, ...)
{
    atomic_fetch_add(&r->viol[k], 1);
    if (atomic_fetch_add(&r->printed, 1) >= PRINT_MAX)
        return;
    char obs[256];
    va_list ap;
    va_start(ap, observed);
    vsnprintf(obs, sizeof obs, observed, ap);
    va_end(ap);
    const struct stress_opts *o = r->o;
    char slack[48] = "";
    if (o->slack)
        snprintf(slack, sizeof slack, " --slack %.6f", (double)o->slack / 1e6);
    fprintf(stdout,
            "  violation %s: %s %s, timer %ld, arming %llu, at +%.3f s: expected %s; observed %s\n"
            "    reproduce: %s%s%s --design %s --scenario %s --threads %d --outsiders %d"
            " --timers %d --duration %.3f --bound %.0f%s --seed %llu\n",
            viol_names[k], r->eng->name, r->scenario, timer, (unsigned long long)arming,
            (double)(pt_nanotime() - r->t0) / 1e9, expected, obs, o->argv0,
            engine_is_loaded(r->eng) ? " --engine " : "",
            engine_is_loaded(r->eng) ? engine_path(r->eng) : "", r->eng->name,
            r->scenario, o->threads, o->outsiders, o->timers, (double)o->duration / 1e9,
            (double)o->bound / 1e6, slack, (unsigned long long)o->seed);
    if (k == V_LATE || k == V_STALL || k == V_TICKS || k == V_UNFIRED) {
        /* over the bound and a little more: the window the firing was
         * due in */
        pt_nanos now = pt_nanotime(), span = o->bound + 250000000, at;
        pt_nanos gap = witness_gap(now - span, now, &at);
        if (gap)
            fprintf(stdout,
                    "    witness: in the last %.0f ms a 1 ms sleep of its own overslept by "
                    "%.1f ms, ending at +%.3f s (the machine stalled)\n",
                    (double)span / 1e6, (double)gap / 1e6, (double)(at - r->t0) / 1e9);
        else
            fprintf(stdout,
                    "    witness: in the last %.0f ms no 1 ms sleep of its own overslept by "
                    "4 ms or more (the machine ran)\n",
                    (double)span / 1e6);
    }
    fflush(stdout);
}

uint64_t stress_violations(const struct stress_run *r)
{
    uint64_t n = 0;
    for (int k = 0; k < V_NKINDS; k++)
        n += atomic_load(&r->viol[k]);
    return n;
}

double stress_rss_mib(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return (double)rss * (double)sysconf(_SC_PAGESIZE) / (1 << 20);
}

void stress_wait(struct stress_run *r, pt_nanos end, void (*scan)(void *ctx), void *ctx)
{
    pt_nanos step = r->o->progress_s > 0 ? (pt_nanos)r->o->progress_s * 1000000000 : 0;
    pt_nanos next = step ? r->t0 + step : end;
    for (pt_nanos now = pt_nanotime(); now < end; now = pt_nanotime()) {
        pt_nanos until = now + 10000000;
        bench_sleep_until(until < end ? until : end);
        if (scan)
            scan(ctx);
        if (step && pt_nanotime() >= next) {
            fprintf(stderr, "[%s %s] %.0f s: %llu ops, %llu firings, %llu violations, %.1f MiB\n",
                    r->eng->name, r->scenario, (double)(next - r->t0) / 1e9,
                    (unsigned long long)atomic_load(&r->ops),
                    (unsigned long long)atomic_load(&r->firings),
                    (unsigned long long)stress_violations(r), stress_rss_mib());
            next += step;
        }
    }
}
