/* The http workload: a real server under a real client. Each design is a
 * server process (http_server.c) -- examples/httpd.c on the scheduler in
 * either timer mode, Go 1.19's raw net.Conn and net/http servers, a tokio
 * server, nginx -- started fresh for every repetition, asked once by hand, then loaded
 * by wrk for a fixed time. A row per (connections, Ps); the repetitions
 * go round the servers, the order turning each time.
 *
 * Figures: requests per second and wrk's latency quantiles (its own
 * histogram, read through a Lua hook), wrk's errors, the server's CPU
 * time over the load and its resident memory at the end, and wrk's own
 * CPU time: on a 2-core machine client and server share the cores, which
 * the client's CPU says. */
#include "http_bench.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "http_server.h"
#include "progress.h"

int http_run(struct report *r, const struct options *o, const struct workload *wl)
{
    struct http_env env;
    const struct http_server *run[HTTP_MAX_SERVERS];
    int nrun = http_setup(r, o, wl->name, &env, run);
    if (nrun <= 0)
        return nrun;
    static struct rep reps[HTTP_MAX_SERVERS][REPORT_MAXREPS];
    for (int ci = 0; ci < o->nhttp_conns; ci++) {
        int conns = o->http_conns[ci];
        char variant[24];
        snprintf(variant, sizeof variant, "c=%d", conns);
        for (int ti = 0; ti < o->nthreads; ti++) {
            int procs = o->threads[ti];
            if (procs > sysconf(_SC_NPROCESSORS_ONLN))
                continue; /* wrk needs a core too: more Ps than cores measure the kernel */
            bool failed[HTTP_MAX_SERVERS] = {false};
            for (int k = 0; k < o->reps; k++)
                for (int j = 0; j < nrun; j++) {
                    int si = (j + k) % nrun; /* the order turns each repetition */
                    if (failed[si])
                        continue;
                    progress_rep(wl->name, variant, procs, run[si]->name, k + 1, o->reps);
                    struct http_running srv;
                    char why[768] = "";
                    struct rep *out = &reps[si][k];
                    memset(out, 0, sizeof *out);
                    int rc = http_server_start(run[si], procs, conns, 0, env.dir, &srv, why,
                                               sizeof why);
                    if (rc == 0) {
                        rc = http_wrk_run(srv.port, conns, o->http_secs, env.lua, srv.pid, out,
                                          why, sizeof why);
                        http_server_stop(&srv);
                    }
                    if (rc != 0) {
                        progress_clear();
                        report_note(r, "http %s, %d P: %s failed: %s", variant, procs,
                                    run[si]->name, why);
                        failed[si] = true;
                    }
                }
            for (int si = 0; si < nrun; si++)
                if (!failed[si])
                    report_add(r, wl, variant, run[si]->name, procs, 0, reps[si], o->reps, NULL,
                               ROW_INTERLEAVED | (run[si]->kind == SRV_PTIMER ? 0 : ROW_PEER));
        }
    }
    return 0;
}
