/* What each row is judged by, in the verdict and in the tables' ratio
 * column: one figure per workload kind, lower always better, so that a
 * ratio to the winner reads the same way in every line. */
#include <stdio.h>

#include "model.h"

const char *kind_name(enum wl_kind kind)
{
    switch (kind) {
    case WL_THROUGHPUT:
        return "throughput";
    case WL_LATENCY:
        return "latency";
    case WL_TICKER:
        return "ticker";
    case WL_MEMORY:
        return "memory";
    case WL_BURST:
        return "burst";
    case WL_NETPOLL:
        return "netpoll";
    case WL_HTTP:
        return "http";
    case WL_IDLE:
        return "idle";
    case WL_SLACK:
        return "slack";
    }
    return "?";
}

const char *metric_name(enum wl_kind kind, bool in_sched)
{
    switch (kind) {
    case WL_THROUGHPUT:
        return "ns/op/thr";
    case WL_MEMORY:
        return in_sched ? "B/G" : "B/timer";
    case WL_BURST:
        return "ns/G";
    case WL_HTTP:
        return "ns/req";
    case WL_SLACK:
        return "wake/s";
    case WL_LATENCY:
    case WL_TICKER:
    case WL_NETPOLL:
    case WL_IDLE:
        break;
    }
    return "p99 us";
}

double metric_value(const struct row *w)
{
    switch (w->kind) {
    case WL_THROUGHPUT:
    case WL_BURST: /* per G, not per thread (report.c) */
    case WL_HTTP:  /* per request, however many Ps served it */
        return w->ns_op.median;
    case WL_MEMORY:
        return w->bytes;
    case WL_SLACK:
        return w->wakeups_s;
    case WL_LATENCY:
    case WL_TICKER:
    case WL_NETPOLL:
    case WL_IDLE:
        break;
    }
    return w->p99;
}

/* Over every repetition, like the lateness it qualifies. */
double ticks_delivered(const struct row *w)
{
    if (!w->ticks_due)
        return -1;
    return (double)w->ticks_fired / (double)w->ticks_due;
}

bool metric_ranked(const struct row *w, double most)
{
    if ((w->origin & ROW_REFERENCE) || metric_value(w) <= 0)
        return false;
    /* A tick never delivered is later than every delivered one: a design
     * that drops ticks would otherwise win on the ones it kept. */
    if (w->kind == WL_TICKER || w->kind == WL_SLACK)
        return ticks_delivered(w) >= most - TICKS_SLACK;
    return true;
}

void ratio_format(char *out, size_t n, double ratio)
{
    if (ratio < 9.995)
        snprintf(out, n, "%.2f", ratio);
    else if (ratio < 99.95)
        snprintf(out, n, "%.1f", ratio);
    else
        snprintf(out, n, "%.0f", ratio);
}
