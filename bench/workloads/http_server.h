/* The http workloads' processes (http_server.c): the servers, what they
 * used, and wrk. */
#ifndef PTBENCH_HTTP_SERVER_H
#define PTBENCH_HTTP_SERVER_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "options.h"
#include "report.h"

enum server_kind { SRV_PTIMER, SRV_GO, SRV_TOKIO, SRV_NGINX, SRV_FLOOR };

struct http_server {
    const char *name;
    enum server_kind kind;
    const char *arg; /* httpd's -m, go-http's -server */
    const char *io;  /* httpd's -o (NULL: poll) */
};

enum { HTTP_MAX_SERVERS = 12 };
extern const struct http_server http_servers[];
extern const int nhttp_servers;

/* Where a workload's files go (nginx's prefix, wrk's script), made. */
struct http_env {
    char dir[512];
    char lua[PATH_MAX];
};

/* Ready to run: wrk installed (else a note, and 0 servers), the
 * descriptor limit raised, env made; the servers that -d, --no-peers and
 * what is installed allow in run[] (notes for those left out). The
 * count, or -1 on an error (said). */
int http_setup(struct report *r, const struct options *o, const char *workload,
               struct http_env *env, const struct http_server *run[HTTP_MAX_SERVERS]);

struct http_running {
    pid_t pid; /* also its process group */
    int port;
};

/* Starts s with procs Ps (workers, GOMAXPROCS) for up to conns
 * connections, closing a connection idle for idle_ms (0: 10 s), and waits
 * until it answers: 0, or -1 with the reason in why. */
int http_server_start(const struct http_server *s, int procs, int conns, long idle_ms,
                      const char *dir, struct http_running *out, char *why, size_t nwhy);
void http_server_stop(struct http_running *r);

/* CPU seconds (user + system), system seconds, and resident bytes less
 * shared pages, of every process in group pgid. */
void http_group_usage(pid_t pgid, double *cpu, double *sys, double *rss);

/* wrk -t1 -c conns for secs against port: requests, duration, errors,
 * latency, wrk's CPU into *out, and the server group's CPU over the run
 * and memory at its end. 0, or -1 with the reason in why. */
int http_wrk_run(int port, int conns, long secs, const char *lua, pid_t server_group,
                 struct rep *out, char *why, size_t nwhy);

/* The same in two halves, for a caller with other work meanwhile: fd
 * reads end of file once wrk is done; finish then waits for it. */
struct http_wrk {
    pid_t pid, group;
    int fd, conns;
    double cpu0, sys0;
};
int http_wrk_start(int port, int conns, long secs, const char *lua, pid_t server_group,
                   struct http_wrk *w, char *why, size_t nwhy);
int http_wrk_finish(struct http_wrk *w, struct rep *out, char *why, size_t nwhy);

/* One row of a workload: its repetitions of every server in run[], a
 * fresh server each, the order turning each repetition; a server that
 * fails is said in a note and has no row. */
struct http_cell {
    const char *variant;
    int procs;    /* the servers' Ps; a row is run only up to one a core (wrk needs one) */
    int conns;    /* the connections a server must have room for */
    long idle_ms; /* the servers' idle timeout (0: their default) */
    /* One repetition on `srv`, up and answering: its figures into *out,
     * any lateness samples into *pool (pooled for the row). 0, or -1
     * with the reason in why. */
    int (*rep)(void *ctx, struct http_running *srv, struct rep *out, struct hist *pool,
               char *why, size_t nwhy);
    void *ctx;
};
void http_cell_run(struct report *r, const struct options *o, const struct workload *wl,
                   const struct http_env *env, const struct http_server *const *run, int nrun,
                   const struct http_cell *cell);

#endif
