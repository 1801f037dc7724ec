/* The http workload: a real server under a real client. Each design is a
 * server process (http_server.c) -- examples/httpd.c on the scheduler in
 * each timer mode, Go 1.19's raw net.Conn and net/http servers, a tokio
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

#include "http_server.h"

struct wrk_ctx {
    const struct options *o;
    const struct http_env *env;
    int conns;
};

static int wrk_rep(void *ctx, struct http_running *srv, struct rep *out, struct hist *pool,
                   char *why, size_t nwhy)
{
    (void)pool; /* wrk keeps its own histogram */
    const struct wrk_ctx *c = ctx;
    return http_wrk_run(srv->port, c->conns, c->o->http_secs, c->env->lua, srv->pid, out, why,
                        nwhy);
}

int http_run(struct report *r, const struct options *o, const struct workload *wl)
{
    struct http_env env;
    const struct http_server *run[HTTP_MAX_SERVERS];
    int nrun = http_setup(r, o, wl->name, &env, run);
    if (nrun <= 0)
        return nrun;
    for (int ci = 0; ci < o->nhttp_conns; ci++) {
        struct wrk_ctx c = {o, &env, o->http_conns[ci]};
        char variant[24];
        snprintf(variant, sizeof variant, "c=%d", c.conns);
        for (int ti = 0; ti < o->nthreads; ti++)
            http_cell_run(r, o, wl, &env, run, nrun,
                          &(struct http_cell){variant, o->threads[ti], c.conns, 0, wrk_rep, &c});
    }
    return 0;
}
