/* The report's rows (medians of repetitions), its files, and the order in
 * which its parts are printed. */
#include "report.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "model.h"
#include "outputs.h"
#include "progress.h"

#ifndef PT_BUILD_TYPE
#define PT_BUILD_TYPE "unknown"
#endif
#ifndef PT_SOURCE_DIR
#define PT_SOURCE_DIR "."
#endif

void rep_of_result(const struct run_result *res, struct rep *p)
{
    struct run_result *r = (struct run_result *)res; /* atomics: loads only */
    *p = (struct rep){
        .ops = r->ops,
        .elapsed_ns = (double)r->elapsed,
        .cpu_s = r->cpu_s,
        .sys_s = r->sys_s,
        .wakeups = (double)r->wakeups,
        .p50 = hist_quantile(&r->lateness, 0.50),
        .p99 = hist_quantile(&r->lateness, 0.99),
        .p999 = hist_quantile(&r->lateness, 0.999),
        .max = (double)atomic_load(&r->lateness.max),
        .late_count = atomic_load(&r->lateness.count),
        .bytes_per_timer = r->bytes_per_timer,
        .rss_bytes = (double)r->rss_bytes,
        .rss_growth = (double)r->rss_growth,
        .create_ns = r->create_ns,
        .cancel_ns = r->cancel_ns,
        .scheduled = r->scheduled,
        .fired = r->fired,
        .cancelled = r->cancelled,
        .stale_cancels = r->stale_cancels,
        .expected_ticks = r->expected_ticks,
        .gs_started = r->gs_started,
        .gs_finished = r->gs_finished,
        .waits = r->waits,
        .wakes = r->wakes,
        .early_wakes = r->early_wakes,
        .timers_owner = r->timers_owner,
        .timers_stolen = r->timers_stolen,
        .timers_sysmon = r->timers_sysmon,
        .steals = r->steals,
        .overflowed = r->overflowed,
        .handoffs = r->handoffs,
        .spawn_error = r->spawn_error,
    };
}

bool rep_counts_ok(const struct workload *wl, const struct rep *p, char *why, size_t n)
{
    why[0] = 0;
    if (wl->kind == WL_SLACK && p->early_wakes) /* a window's start is a promise */
        snprintf(why, n, "%llu timers fired before their time",
                 (unsigned long long)p->early_wakes);
    if (!wl_in_sched(wl))
        return why[0] == 0;
    /* memory-g's and spawn-burst's spawn error is their capacity, said
     * in a note, not a miscount: they measure at the count reached */
    if (p->spawn_error && !wl_isolated(wl))
        snprintf(why, n, "pt_go failed (%d) after %llu Gs", p->spawn_error,
                 (unsigned long long)p->gs_started);
    else if (p->gs_finished != p->gs_started)
        snprintf(why, n, "%llu of %llu Gs finished", (unsigned long long)p->gs_finished,
                 (unsigned long long)p->gs_started);
    else if (p->wakes != p->waits)
        snprintf(why, n, "%llu waits begun, %llu ended", (unsigned long long)p->waits,
                 (unsigned long long)p->wakes);
    else if (p->early_wakes)
        snprintf(why, n, "%llu sleeps woke before their deadline",
                 (unsigned long long)p->early_wakes);
    else if (wl->virtual_time && p->max > 0) /* the virtual clock promises exact times */
        snprintf(why, n, "a wake %.0f virtual ns late", (double)p->max);
    else if (!p->ops)
        snprintf(why, n, "no ops");
    return why[0] == 0;
}

static void read_line(const char *cmd, char *out, size_t n)
{
    out[0] = 0;
    FILE *p = popen(cmd, "r");
    if (!p)
        return;
    if (fgets(out, (int)n, p))
        out[strcspn(out, "\n")] = 0;
    pclose(p);
}

static void cpu_model(char *out, size_t n)
{
    snprintf(out, n, "unknown cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                snprintf(out, n, "%s", c + 2);
                out[strcspn(out, "\n")] = 0;
            }
            break;
        }
    fclose(f);
}

int report_open(struct report *r, const char *dir, const char *cmd, const char *baseline,
                long slack_ns)
{
    memset(r, 0, sizeof *r);
    r->dir = dir;
    r->baseline = baseline;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    r->cores = cores > 0 ? (int)cores : 1;
    char commit[64], cpu[256], path[1024];
    read_line("git -C " PT_SOURCE_DIR " rev-parse --short HEAD 2>/dev/null", commit,
              sizeof commit);
    if (!commit[0])
        snprintf(commit, sizeof commit, "unknown");
    char dirty[8];
    read_line("git -C " PT_SOURCE_DIR " status --porcelain --untracked-files=no 2>/dev/null | "
              "head -1",
              dirty, sizeof dirty);
    cpu_model(cpu, sizeof cpu);
    struct utsname u;
    uname(&u);
    char date[64], clock[64], boot[256];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    read_line("cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null",
              clock, sizeof clock);
    /* what the kernel was booted with that colours timings and memory */
    read_line("tr ' ' '\\n' </proc/cmdline 2>/dev/null | grep -E "
              "'^(tsc=|clocksource=|pvm_no_zero_page|mitigations=|nohz|isolcpus=|idle=)' | "
              "paste -sd ' '",
              boot, sizeof boot);
    snprintf(r->header, sizeof r->header,
             "command:  %s\n"
             "commit:   %s%s\n"
             "date:     %s\n"
             "machine:  %s, %d cores, Linux %s\n"
             "clock:    %s%s%s\n"
             "build:    %s; timer slack %ld ns on every thread; medians of the repetitions\n"
             "          (our designs' lateness percentiles: all repetitions' samples pooled)\n",
             cmd, commit, dirty[0] ? " (with uncommitted changes)" : "", date, cpu, r->cores,
             u.release, clock[0] ? clock : "unknown clock source", boot[0] ? "; booted with " : "",
             boot, PT_BUILD_TYPE, slack_ns);
    snprintf(path, sizeof path, "%s/ptbench.jsonl", dir);
    r->jsonl = fopen(path, "w");
    snprintf(path, sizeof path, "%s/ptbench.csv", dir);
    r->csv = fopen(path, "w");
    if (!r->jsonl || !r->csv) {
        fprintf(stderr, "ptbench: cannot write under %s\n", dir);
        return -1;
    }
    fields_csv_header(r->csv);
    return 0;
}

void report_note(struct report *r, const char *fmt, ...)
{
    size_t len = strlen(r->notes);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->notes + len, sizeof r->notes - len, fmt, ap);
    va_end(ap);
    len = strlen(r->notes);
    if (len + 1 < sizeof r->notes)
        strcat(r->notes, "\n");
}

void report_error(struct report *r, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    progress_clear();
    fprintf(stderr, "ptbench: error: %s\n", msg);
    report_note(r, "error: %s", msg);
    r->errors++;
}

void report_add(struct report *r, const struct workload *wl, const char *variant,
                const char *design, int threads, size_t timer_bytes, const struct rep *reps, int n,
                const struct hist *pooled, unsigned origin)
{
    if (n <= 0)
        return;
    if (n > REPORT_MAXREPS)
        n = REPORT_MAXREPS;
    if (r->nrows == r->caprows) {
        int cap = r->caprows ? 2 * r->caprows : 64;
        struct row *rows = realloc(r->rows, (size_t)cap * sizeof *rows);
        if (!rows)
            return;
        r->rows = rows;
        r->caprows = cap;
    }
    struct row *w = &r->rows[r->nrows++];
    memset(w, 0, sizeof *w);
    snprintf(w->design, sizeof w->design, "%s", design);
    snprintf(w->workload, sizeof w->workload, "%s", wl->name);
    snprintf(w->variant, sizeof w->variant, "%s", variant);
    w->kind = wl->kind;
    w->fires = wl->fires;
    w->in_sched = wl_in_sched(wl);
    w->origin = origin;
    w->threads = threads;
    w->reps = n;
    w->timer_bytes = timer_bytes;
    enum {
        OPS_S,
        NS_OP,
        P50,
        P99,
        P999,
        MAX,
        WAKEUPS,
        CPU,
        SYS,
        BYTES,
        CREATE,
        CANCEL,
        RSS,
        RSSG,
        ERRORS,
        CLIENT_CPU,
        LOAD,
        WAKEUPS_S,
        CPU_PER_S,
        FIRED_PER_WAKEUP,
        NV
    };
    double v[NV][REPORT_MAXREPS];
    for (int i = 0; i < n; i++) {
        const struct rep *p = &reps[i];
        double secs = p->elapsed_ns / 1e9;
        v[OPS_S][i] = secs > 0 ? (double)p->ops / secs : 0;
        /* per thread, as the anchors count: each thread's time per op;
         * a burst's wall time per G, however many Ps made and ran them */
        double per = wl->kind == WL_BURST || wl->kind == WL_HTTP || wl->per_run ? 1 : threads;
        v[NS_OP][i] = p->ops ? p->elapsed_ns * per / (double)p->ops : 0;
        v[P50][i] = p->p50 / 1e3;
        v[P99][i] = p->p99 / 1e3;
        v[P999][i] = p->p999 / 1e3;
        v[MAX][i] = p->max / 1e3;
        v[WAKEUPS][i] = p->wakeups;
        v[CPU][i] = p->cpu_s;
        v[SYS][i] = p->sys_s;
        v[BYTES][i] = p->bytes_per_timer;
        v[CREATE][i] = p->create_ns;
        v[CANCEL][i] = p->cancel_ns;
        v[RSS][i] = p->rss_bytes;
        v[RSSG][i] = p->rss_growth;
        v[ERRORS][i] = p->errors;
        v[CLIENT_CPU][i] = p->client_cpu_s;
        v[LOAD][i] = p->load_rps;
        v[WAKEUPS_S][i] = secs > 0 ? p->wakeups / secs : 0;
        v[CPU_PER_S][i] = secs > 0 ? p->cpu_s / secs : 0;
        v[FIRED_PER_WAKEUP][i] = p->wakeups > 0 ? (double)p->fired / p->wakeups : 0;
        w->ticks_fired += p->fired;
        w->ticks_due += p->expected_ticks;
    }
    memcpy(w->ns_op_rep, v[NS_OP], (size_t)n * sizeof v[NS_OP][0]);
    w->ops_s = stat3_of(v[OPS_S], n);
    w->ns_op = stat3_of(v[NS_OP], n);
    if (pooled && atomic_load(&((struct hist *)pooled)->count)) {
        w->p50 = hist_quantile(pooled, 0.50) / 1e3;
        w->p99 = hist_quantile(pooled, 0.99) / 1e3;
        w->p999 = hist_quantile(pooled, 0.999) / 1e3;
        w->max = (double)atomic_load(&((struct hist *)pooled)->max) / 1e3;
    } else {
        /* Each repetition's p <= its max, and medians keep that order. */
        w->p50 = stat3_of(v[P50], n).median;
        w->p99 = stat3_of(v[P99], n).median;
        w->p999 = stat3_of(v[P999], n).median;
        w->max = stat3_of(v[MAX], n).median;
    }
    w->wakeups = stat3_of(v[WAKEUPS], n).median;
    w->cpu_s = stat3_of(v[CPU], n).median;
    w->sys_s = stat3_of(v[SYS], n).median;
    w->bytes = stat3_of(v[BYTES], n).median;
    w->create_ns = stat3_of(v[CREATE], n).median;
    w->cancel_ns = stat3_of(v[CANCEL], n).median;
    w->rss = stat3_of(v[RSS], n).median;
    w->rss_growth = stat3_of(v[RSSG], n).median;
    w->errors = stat3_of(v[ERRORS], n).median;
    w->client_cpu = stat3_of(v[CLIENT_CPU], n).median;
    w->load_rps = stat3_of(v[LOAD], n).median;
    w->wakeups_s = stat3_of(v[WAKEUPS_S], n).median;
    w->cpu_per_s = stat3_of(v[CPU_PER_S], n).median;
    w->fired_per_wakeup = stat3_of(v[FIRED_PER_WAKEUP], n).median;
    w->last = reps[n - 1];
    const double *figure = v[P99]; /* each repetition's, as metric_value judges the row */
    if (w->kind == WL_THROUGHPUT || w->kind == WL_BURST || w->kind == WL_HTTP)
        figure = v[NS_OP];
    else if (w->kind == WL_MEMORY)
        figure = v[BYTES];
    else if (w->kind == WL_SLACK)
        figure = v[WAKEUPS_S];
    /* over the repetitions that have a figure: one with no ops or no
     * samples says nothing about the spread, and where none has one
     * (lateness kept only pooled) the spread is unknown: -1 */
    double m = metric_value(w);
    w->lo = w->hi = -1;
    for (int i = 0; i < n; i++)
        if (figure[i] > 0) {
            w->lo = w->lo < 0 || figure[i] < w->lo ? figure[i] : w->lo;
            w->hi = figure[i] > w->hi ? figure[i] : w->hi;
        }
    if (w->lo > 0 && m > 0) {
        w->lo = m < w->lo ? m : w->lo;
        w->hi = m > w->hi ? m : w->hi;
    }
    fields_json(r->jsonl, w);
    fields_csv(r->csv, w);
    fflush(r->jsonl);
    fflush(r->csv);
    progress_row(w);
}

const double report_quantiles[REPORT_NQ] = {0.01, 0.05, 0.1,   0.2,   0.3,    0.4,
                                            0.5,  0.6,  0.7,   0.8,   0.9,    0.95,
                                            0.97, 0.99, 0.995, 0.999, 0.9995, 0.9999};

void report_distribution(struct report *r, const struct workload *wl, const char *variant,
                         const char *design, int threads, const struct hist *h)
{
    double us[REPORT_NQ];
    for (int i = 0; i < REPORT_NQ; i++)
        us[i] = hist_quantile(h, report_quantiles[i]) / 1e3;
    report_distribution_values(r, wl, variant, design, threads, us);
}

void report_distribution_values(struct report *r, const struct workload *wl, const char *variant,
                                const char *design, int threads, const double *us)
{
    /* One plot entry per (workload, variant, design, threads): written
     * again, the file is replaced and the entry stays. */
    bool known = false;
    for (int i = 0; i < r->ndists && !known; i++) {
        const struct dist *d = &r->dists[i];
        known = !strcmp(d->design, design) && !strcmp(d->workload, wl->name) &&
                !strcmp(d->variant, variant) && d->threads == threads;
    }
    if (!known) {
        if (r->ndists == r->capdists) {
            int cap = r->capdists ? 2 * r->capdists : 32;
            struct dist *d = realloc(r->dists, (size_t)cap * sizeof *d);
            if (!d)
                return;
            r->dists = d;
            r->capdists = cap;
        }
        struct dist *d = &r->dists[r->ndists++];
        snprintf(d->design, sizeof d->design, "%s", design);
        snprintf(d->workload, sizeof d->workload, "%s", wl->name);
        snprintf(d->variant, sizeof d->variant, "%s", variant);
        d->threads = threads;
    }
    struct dist key = {.threads = threads};
    snprintf(key.workload, sizeof key.workload, "%s", wl->name);
    snprintf(key.variant, sizeof key.variant, "%s", variant);
    char name[128], path[1024];
    dist_name(&key, design, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s.dat", r->dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f, "# quantile lateness_us (%s, %s %s, %d threads)\n", design, wl->name, variant,
            threads);
    for (int i = 0; i < REPORT_NQ; i++)
        fprintf(f, "%g %.4g\n", report_quantiles[i], us[i]);
    fclose(f);
}

/* The verdict first: it is what the report is read for. */
static void print_report(const struct report *r, FILE *f)
{
    verdict_print(r, f);
    if (r->notes[0])
        fprintf(f, "\n%s", r->notes);
    fprintf(f, "\n%s", r->header);
    tables_print(r, f);
}

void report_finish(struct report *r, bool want_plots)
{
    progress_done();
    print_report(r, stdout);
    char path[1024];
    snprintf(path, sizeof path, "%s/table.txt", r->dir);
    FILE *f = fopen(path, "w");
    if (f) {
        print_report(r, f);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/RESULTS.md", r->dir);
    if ((f = fopen(path, "w"))) {
        page_write(r, f);
        fclose(f);
    }
    printf("\nresults: %s/RESULTS.md (the page), %s/table.txt, %s/ptbench.jsonl, "
           "%s/ptbench.csv\n",
           r->dir, r->dir, r->dir, r->dir);
    if (want_plots)
        plots_write(r);
    fclose(r->jsonl);
    fclose(r->csv);
    free(r->rows);
    free(r->dists);
}
