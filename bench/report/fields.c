/* A row's fields, listed once for the JSON lines and the CSV both, so
 * that neither file can carry a field the other lacks. */
#include <string.h>

#include "model.h"

enum ftype { F_STR, F_INT, F_NUM };

struct field {
    const char *name;
    enum ftype type;
    int prec; /* F_NUM: digits after the point */
    const char *s;
    double d;
    unsigned long long u;
};

enum { NFIELDS_MAX = 64 };

static int row_fields(const struct row *w, struct field *f)
{
    const struct rep *l = &w->last; /* counts: the last repetition's */
    int n = 0;
#define S(k, v) f[n++] = (struct field){k, F_STR, 0, v, 0, 0}
#define I(k, v)                                                                                    \
    f[n++] = (struct field)                                                                        \
    {                                                                                              \
        k, F_INT, 0, NULL, 0, (unsigned long long)(v)                                              \
    }
#define D(k, v, p)                                                                                 \
    f[n++] = (struct field)                                                                        \
    {                                                                                              \
        k, F_NUM, p, NULL, v, 0                                                                    \
    }
    S("design", w->design);
    S("workload", w->workload);
    S("kind", kind_name(w->kind));
    S("variant", w->variant);
    I("threads", w->threads);
    I("reps", w->reps);
    D("ops_per_s", w->ops_s.median, 0);
    D("ops_per_s_min", w->ops_s.min, 0);
    D("ops_per_s_max", w->ops_s.max, 0);
    D("ns_per_op", w->ns_op.median, 2); /* per thread */
    D("ns_per_op_min", w->ns_op.min, 2);
    D("ns_per_op_max", w->ns_op.max, 2);
    /* what the verdict judges the row by (metric.c), and its spread (-1:
     * no repetition had a figure of its own) */
    D("figure", metric_value(w), 2);
    D("figure_min", w->lo, 2);
    D("figure_max", w->hi, 2);
    D("lat_p50_us", w->p50, 2);
    D("lat_p99_us", w->p99, 2);
    D("lat_p999_us", w->p999, 2);
    D("lat_max_us", w->max, 2);
    D("wakeups", w->wakeups, 0);
    D("cpu_s", w->cpu_s, 4);
    D("cpu_sys_s", w->sys_s, 4);
    D("wakeups_per_s", w->wakeups_s, 1); /* slack (0 elsewhere) */
    D("cpu_per_s", w->cpu_per_s, 4);
    D("fired_per_wakeup", w->fired_per_wakeup, 2);
    D("bytes_per_timer", w->bytes, 2);
    D("create_ns", w->create_ns, 2);
    D("cancel_ns", w->cancel_ns, 2);
    /* throughput: resident anonymous bytes at the end of the measured
     * phase, and their growth over the run (medians; 0 elsewhere) */
    D("rss_bytes", w->rss, 0);
    D("rss_growth_bytes", w->rss_growth, 0);
    /* http: the client's errors and CPU seconds (medians; 0 elsewhere) */
    D("errors", w->errors, 0);
    D("client_cpu_s", w->client_cpu, 4);
    D("load_req_per_s", w->load_rps, 0); /* http-idle */
    I("timer_bytes", w->timer_bytes);
    I("ops", l->ops);
    I("scheduled", l->scheduled);
    I("fired", l->fired);
    I("cancelled", l->cancelled);
    I("stale_cancels", l->stale_cancels);
    I("expected_ticks", l->expected_ticks);
    D("ticks_delivered", w->ticks_due ? ticks_delivered(w) : 0, 4); /* all repetitions' */
    /* workloads in the scheduler: the counts that must add up, and the
     * scheduler's own counters (0 elsewhere) */
    I("gs_started", l->gs_started);
    I("gs_finished", l->gs_finished);
    I("waits", l->waits);
    I("wakes", l->wakes);
    I("early_wakes", l->early_wakes);
    D("spawn_error", l->spawn_error, 0);
    I("timers_owner", l->timers_owner);
    I("timers_stolen", l->timers_stolen);
    I("timers_sysmon", l->timers_sysmon);
    I("steals", l->steals);
    I("overflowed", l->overflowed);
    I("handoffs", l->handoffs);
#undef S
#undef I
#undef D
    return n;
}

static void put_value(FILE *f, const struct field *x, bool json)
{
    switch (x->type) {
    case F_STR:
        fprintf(f, json ? "\"%s\"" : "%s", x->s);
        break;
    case F_INT:
        fprintf(f, "%llu", x->u);
        break;
    case F_NUM:
        fprintf(f, "%.*f", x->prec, x->d);
        break;
    }
}

void fields_csv_header(FILE *f)
{
    struct row blank;
    memset(&blank, 0, sizeof blank);
    struct field x[NFIELDS_MAX];
    int n = row_fields(&blank, x);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? "," : "", x[i].name);
    fprintf(f, "\n");
}

void fields_csv(FILE *f, const struct row *w)
{
    struct field x[NFIELDS_MAX];
    int n = row_fields(w, x);
    for (int i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        put_value(f, &x[i], false);
    }
    fprintf(f, "\n");
}

void fields_json(FILE *f, const struct row *w)
{
    struct field x[NFIELDS_MAX];
    int n = row_fields(w, x);
    fputc('{', f);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s\"%s\":", i ? "," : "", x[i].name);
        put_value(f, &x[i], true);
    }
    fprintf(f, "}\n");
}
