/* Peers: other programs that run the same workloads and print one JSON
 * line per repetition (the fields of struct rep). ptbench runs them in the
 * same invocation when the build made them (peers/CMakeLists.txt, target
 * ptbench-peers) and merges their rows.
 *  - go1.19: bench/peers/go, Go's runtime timers (the per-P design itself)
 *  - libuv:  bench/peers/libuv, one binary heap per loop, single thread
 *  - tokio:  bench/peers/tokio, tokio 1.24's hierarchical wheel behind one
 *            lock, and its tasks; tokio-warm: its timer loops yielding
 *            now and then, so that the driver is not woken on every arm */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "peer_build.h"
#include "progress.h"
#include "report.h"

static double field(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    return p ? strtod(p + strlen(pat), NULL) : 0;
}

/* The values of the array field `key` ("key":[a,b,...]); how many were read. */
static int field_array(const char *line, const char *key, double *out, int max)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":[", key);
    const char *p = strstr(line, pat);
    if (!p)
        return 0;
    p += strlen(pat);
    int n = 0;
    while (n < max && *p && *p != ']') {
        char *end;
        out[n++] = strtod(p, &end);
        if (end == p)
            return 0;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

struct peer {
    const char *name;
    unsigned bit; /* PEER_*: workloads name the peers that run them */
    bool single_thread;
    const char *(*command)(void); /* NULL if its toolchain is missing */
    const char *missing;          /* why, when command() says NULL */
    const char *args;             /* more flags for this peer's rows */
};

static struct peer_build go_peer = {.dir = "go", .name = "ptbench-go"};

static const char *go_command(void)
{
    return peer_go_program(&go_peer);
}

static const char *uv_command(void)
{
    return system("test -x " PT_BINARY_DIR "/ptbench-uv") == 0 ? PT_BINARY_DIR "/ptbench-uv"
                                                                 : NULL;
}

static struct peer_build tokio_peer = {.dir = "tokio", .name = "ptbench-tokio"};

static const char *tokio_command(void)
{
    return peer_cargo_program(&tokio_peer);
}

static const struct peer peers[] = {
    {"go1.19", PEER_GO, false, go_command, NULL, ""},
    {"libuv", PEER_LIBUV, true, uv_command,
     "libuv not found at build time: apt-get install libuv1-dev", ""},
    {"tokio", PEER_TOKIO, false, tokio_command, NULL, ""},
    {"tokio-warm", PEER_TOKIO_WARM, false, tokio_command, NULL, " -warm"},
};
enum { NPEERS = sizeof peers / sizeof *peers };

/* --peers: the peers left out (none unless it names some). */
static bool left_out[NPEERS];

int peers_choose(const char *const *names, int n)
{
    bool out[NPEERS];
    for (size_t i = 0; i < NPEERS; i++)
        out[i] = true;
    for (int k = 0; k < n; k++) {
        size_t i = 0;
        while (i < NPEERS && strcmp(peers[i].name, names[k]) != 0)
            i++;
        if (i == NPEERS)
            return -EINVAL;
        out[i] = false;
    }
    memcpy(left_out, out, sizeof left_out);
    return 0;
}

bool peer_known(const char *name)
{
    for (size_t i = 0; i < NPEERS; i++)
        if (strcmp(peers[i].name, name) == 0)
            return true;
    return false;
}

int peers_planned(const struct workload *wl, int threads)
{
    int n = 0;
    for (size_t i = 0; i < NPEERS; i++)
        n += !left_out[i] && (wl->peers & peers[i].bit) &&
             !(peers[i].single_thread && threads != 1) && peers[i].command();
    return n;
}

void peers_run(struct report *r, const struct workload *wl, const char *variant, int threads,
               const struct run_config *cfg, int reps)
{
    const char *workload = wl->name;
    for (size_t i = 0; i < NPEERS; i++) {
        const struct peer *p = &peers[i];
        if (left_out[i] || !(wl->peers & p->bit) || (p->single_thread && threads != 1))
            continue;
        const char *bin = p->command();
        if (!bin) {
            static bool said[NPEERS];
            const char *why = p->missing          ? p->missing
                              : p->bit == PEER_GO ? go_peer.why
                                                  : tokio_peer.why;
            if (!said[i])
                report_note(r, "peer %s: skipped (%s)", p->name, why);
            said[i] = true;
            continue;
        }
        progress_rep(workload, variant, threads, p->name, 0, reps);
        /* memory: each repetition in a fresh process, as ptbench does */
        bool fresh = wl_isolated(wl);
        /* the quantiles to report lateness at: the same as ours */
        char qarg[512];
        size_t off = 0;
        for (int q = 0; q < REPORT_NQ; q++)
            off += (size_t)snprintf(qarg + off, sizeof qarg - off, "%s%g", q ? "," : "",
                                    report_quantiles[q]);
        struct rep rs[REPORT_MAXREPS];
        double last_q[REPORT_NQ];
        int n = 0, rc = 0, nq = 0;
        for (int round = 0; round < (fresh ? reps : 1) && rc == 0; round++) {
            char cmd[2048];
            /* A peer that hangs must not hang the comparison. */
            snprintf(cmd, sizeof cmd,
                     "timeout 600 %s -workload %s -threads %d -reps %d -duration-ms %lld "
                     "-ops %ld -preload %d -window %d -timeout-ms %lld -tickers %d -gs %ld "
                     "-timers %ld -busy=%s -quantiles %s%s",
                     bin, workload, threads, fresh ? 1 : reps, (long long)(cfg->duration / 1000000),
                     cfg->ops, cfg->preload, cfg->window, (long long)(cfg->timeout / 1000000),
                     cfg->tickers, cfg->memory_gs, cfg->memory_timers, cfg->busy ? "true" : "false",
                     qarg, p->args);
            FILE *f = popen(cmd, "r");
            if (!f)
                break;
            char line[4096];
            while (n < REPORT_MAXREPS && fgets(line, sizeof line, f)) {
                if (line[0] != '{')
                    continue;
                rs[n++] = (struct rep){
                    .ops = (uint64_t)field(line, "ops"),
                    .elapsed_ns = field(line, "elapsed_ns"),
                    .cpu_s = field(line, "cpu_s"),
                    .sys_s = field(line, "cpu_sys_s"),
                    .wakeups = field(line, "wakeups"),
                    .p50 = field(line, "lat_p50_ns"),
                    .p99 = field(line, "lat_p99_ns"),
                    .p999 = field(line, "lat_p999_ns"),
                    .max = field(line, "lat_max_ns"),
                    .bytes_per_timer = field(line, "bytes_per_timer"),
                    .create_ns = field(line, "create_ns"),
                    .cancel_ns = field(line, "cancel_ns"),
                    .rss_bytes = field(line, "rss_bytes"), /* 0: the peer does not say */
                    .scheduled = (uint64_t)field(line, "scheduled"),
                    .fired = (uint64_t)field(line, "fired"),
                    .cancelled = (uint64_t)field(line, "cancelled"),
                    .expected_ticks = (uint64_t)field(line, "expected_ticks"),
                    .gs_started = (uint64_t)field(line, "gs_started"),
                    .gs_finished = (uint64_t)field(line, "gs_finished"),
                    .waits = (uint64_t)field(line, "waits"),
                    .wakes = (uint64_t)field(line, "wakes"),
                    .early_wakes = (uint64_t)field(line, "early_wakes"),
                    .spawn_error = (int)field(line, "spawn_error"),
                };
                /* the last repetition's distribution, as for our designs */
                double q[REPORT_NQ];
                if (field_array(line, "lat_q_ns", q, REPORT_NQ) == REPORT_NQ) {
                    for (int k = 0; k < REPORT_NQ; k++)
                        last_q[k] = q[k] / 1e3;
                    nq = REPORT_NQ;
                }
            }
            rc = pclose(f);
        }
        if (rc != 0 || n == 0) {
            report_note(r, "peer %s: %s %s threads %d failed (exit %d)", p->name, workload,
                        variant, threads, rc);
            continue;
        }
        /* a peer's counts must add up as ours do */
        for (int k = 0; k < n; k++) {
            char why[160];
            if (!rep_counts_ok(wl, &rs[k], why, sizeof why))
                report_error(r, "peer %s: %s, %d P%s: %s", p->name, workload, threads,
                             threads == 1 ? "" : "s", why);
        }
        report_add(r, wl, variant, p->name, threads, 0, rs, n, NULL, ROW_PEER);
        if (nq && wl->fires) /* plotted beside ours */
            report_distribution_values(r, wl, variant, p->name, threads, last_q);
    }
}
