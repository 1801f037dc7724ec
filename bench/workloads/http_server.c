/* The http workloads' processes: the servers (examples/httpd.c on the
 * scheduler, Go 1.19's, tokio's, nginx, and their floor, a bare epoll
 * loop: peers/floor/httpd_floor.c), each started fresh on 127.0.0.1 and
 * stopped with its process group, what they used, and wrk. */
#define _GNU_SOURCE
#include "http_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "peer_build.h"
#include "progress.h"

const struct http_server http_servers[] = {
    {"sched-perp", SRV_PTIMER, "per-p", NULL},
    {"sched-tt", SRV_PTIMER, "timerthread", NULL},
    {"sched-lheap", SRV_PTIMER, "lheap", NULL},
    {"sched-uring", SRV_PTIMER, "per-p", "uring"},
    {"go1.19", SRV_GO, "raw", NULL},
    {"go1.19-http", SRV_GO, "nethttp", NULL},
    {"tokio", SRV_TOKIO, NULL, NULL},
    {"nginx", SRV_NGINX, NULL, NULL},
    {"floor", SRV_FLOOR, NULL, NULL},
};
const int nhttp_servers = sizeof http_servers / sizeof http_servers[0];

/* ---- what is installed -------------------------------------------------- */

static bool executable(const char *path)
{
    return access(path, X_OK) == 0;
}

static struct peer_build go_http = {.dir = "go-http", .name = "ptbench-go-http"};
static struct peer_build tokio_http = {.dir = "tokio-http", .name = "ptbench-tokio-http"};

/* The tokio server; NULL with the reason in *why. */
static const char *tokio_server(const char **why)
{
    const char *path = peer_cargo_program(&tokio_http);
    *why = tokio_http.why;
    return path;
}

static const char *nginx_path(void)
{
    return executable("/usr/sbin/nginx") ? "/usr/sbin/nginx" : NULL;
}

/* Whether server s can run here; if not, why (said once in the report). */
static bool available(const struct http_server *s, const char **why)
{
    switch (s->kind) {
    case SRV_PTIMER:
        *why = "ptbench-httpd was not built";
        return executable(PT_BINARY_DIR "/bench/ptbench-httpd");
    case SRV_GO:
        *why = go_http.why;
        return peer_go_program(&go_http) != NULL;
    case SRV_TOKIO:
        return tokio_server(why) != NULL;
    case SRV_NGINX:
        *why = "nginx is not installed: apt-get install nginx-light";
        return nginx_path() != NULL;
    case SRV_FLOOR:
        *why = "ptbench-httpd-floor was not built";
        return executable(PT_BINARY_DIR "/bench/ptbench-httpd-floor");
    }
    return false;
}

/* ---- one server process ---------------------------------------------------- */

/* A port the kernel has free now, for nginx, which is told its port. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* nginx's configuration for `procs` workers on `port`, each with room
 * for `conns` connections (its connection table is allocated whole at
 * start: sized to the load, as an operator would, not to a million):
 * keep-alive for the others' idle timeout, no logging, everything under
 * dir. */
static int nginx_conf(const char *dir, int procs, int conns, long idle_ms, int port, char *path,
                      size_t n)
{
    snprintf(path, n, "%.512s/nginx.conf", dir);
    /* no more descriptors than the hard limit lets it have */
    int nofile = 2 * conns + 1024;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY &&
        (rlim_t)nofile > rl.rlim_max)
        nofile = (int)rl.rlim_max;
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f,
            "worker_processes %d;\n"
            "worker_rlimit_nofile %d;\n"
            "daemon off;\n"
            "pid %s/nginx.pid;\n"
            "error_log %s/nginx-error.log error;\n"
            "events { worker_connections %d; }\n"
            "http {\n"
            "  access_log off;\n"
            "  client_body_temp_path %s;\n  proxy_temp_path %s;\n  fastcgi_temp_path %s;\n"
            "  uwsgi_temp_path %s;\n  scgi_temp_path %s;\n"
            "  keepalive_timeout %ldms;\n"
            "  keepalive_requests 100000000;\n"
            "  server {\n"
            "    listen 127.0.0.1:%d backlog=4096;\n"
            "    location / { default_type text/plain; return 200 \"ok\\n\"; }\n"
            "  }\n"
            "}\n",
            procs, nofile, dir, dir, conns + 1024, dir, dir, dir, dir, dir, idle_ms, port);
    return fclose(f);
}

/* Connects to the port; 0 once something answers "HTTP/1.1 200". */
static int ask_once(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    static const char req[] = "GET / HTTP/1.1\r\nHost: ptbench\r\nConnection: close\r\n\r\n";
    char buf[256] = "";
    int rc = -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1)) {
        ssize_t got = 0, r;
        while (got < 12 && (r = read(fd, buf + got, sizeof buf - 1 - (size_t)got)) > 0)
            got += r;
        rc = got >= 12 && strncmp(buf, "HTTP/1.1 200", 12) == 0 ? 0 : -1;
    }
    close(fd);
    return rc;
}

/* Starts s (http_server.h):
 * 0, or -1 with the reason in why. */
int http_server_start(const struct http_server *s, int procs, int conns, long idle_ms,
                      const char *dir, struct http_running *out, char *why, size_t nwhy)
{
    int out_pipe[2] = {-1, -1};
    int port = 0;
    char conf[600], nprocs[16], idle[32];
    snprintf(nprocs, sizeof nprocs, "%d", procs);
    if (idle_ms <= 0)
        idle_ms = 10000;
    snprintf(idle, sizeof idle, "%ld", idle_ms);
    if (s->kind == SRV_NGINX) {
        port = free_port();
        if (port < 0 || nginx_conf(dir, procs, conns, idle_ms, port, conf, sizeof conf) != 0) {
            snprintf(why, nwhy, "cannot write nginx's configuration in %s", dir);
            return -1;
        }
    } else if (pipe2(out_pipe, O_CLOEXEC) != 0) {
        snprintf(why, nwhy, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0); /* its own group: nginx's workers are stopped with it */
        if (out_pipe[1] >= 0)
            dup2(out_pipe[1], 1);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 2);
        switch (s->kind) {
        case SRV_PTIMER:
            execl(PT_BINARY_DIR "/bench/ptbench-httpd", "ptbench-httpd", "-P", nprocs, "-m", s->arg,
                  "-i", idle, "-o", s->io ? s->io : "poll", (char *)NULL);
            break;
        case SRV_GO:
            setenv("GOMAXPROCS", nprocs, 1);
            execl(go_http.path, "ptbench-go-http", "-server", s->arg, "-idle-ms", idle,
                  (char *)NULL);
            break;
        case SRV_TOKIO:
            execl(tokio_http.path, "ptbench-tokio-http", "-P", nprocs, "-idle-ms", idle,
                  (char *)NULL);
            break;
        case SRV_NGINX:
            execl(nginx_path(), "nginx", "-p", dir, "-c", conf, (char *)NULL);
            break;
        case SRV_FLOOR:
            execl(PT_BINARY_DIR "/bench/ptbench-httpd-floor", "ptbench-httpd-floor", (char *)NULL);
            break;
        }
        _exit(127);
    }
    if (out_pipe[1] >= 0)
        close(out_pipe[1]);
    if (pid < 0) {
        snprintf(why, nwhy, "fork: %s", strerror(errno));
        if (out_pipe[0] >= 0)
            close(out_pipe[0]);
        return -1;
    }
    out->pid = pid;
    if (out_pipe[0] >= 0) { /* ours and Go's say where they listen */
        FILE *f = fdopen(out_pipe[0], "r");
        if (!f || fscanf(f, "listening on 127.0.0.1:%d", &port) != 1)
            port = -1;
        if (f)
            fclose(f);
        else
            close(out_pipe[0]);
    }
    out->port = port;
    /* up to 5 s for it to answer (nginx says nothing when it is ready) */
    for (int i = 0; port > 0 && i < 500; i++) {
        if (ask_once(port) == 0)
            return 0;
        if (waitpid(pid, NULL, WNOHANG) == pid)
            break;
        usleep(10000);
    }
    snprintf(why, nwhy, "%s did not answer on 127.0.0.1:%d", s->name, port);
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

void http_server_stop(struct http_running *r)
{
    kill(-r->pid, SIGKILL);
    kill(r->pid, SIGKILL);
    waitpid(r->pid, NULL, 0);
}

/* ---- what the server used: its process group's CPU and memory ----------- */

void http_group_usage(pid_t pgid, double *cpu, double *sys, double *rss)
{
    *cpu = *sys = *rss = 0;
    DIR *d = opendir("/proc");
    if (!d)
        return;
    long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[300], buf[1024];
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        /* fields after the command's closing parenthesis: state is the
         * 3rd; pgrp the 5th; utime, stime the 14th, 15th */
        char *p = strrchr(buf, ')');
        long pgrp = 0;
        unsigned long ut = 0, st = 0;
        if (!p || sscanf(p + 2, "%*c %*d %ld %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &pgrp,
                         &ut, &st) != 3 ||
            pgrp != pgid)
            continue;
        *cpu += (double)(ut + st) / (double)tick;
        *sys += (double)st / (double)tick;
        snprintf(path, sizeof path, "/proc/%s/statm", e->d_name);
        if ((f = fopen(path, "r"))) {
            long size, res, shared;
            if (fscanf(f, "%ld %ld %ld", &size, &res, &shared) == 3)
                *rss += (double)(res - shared) * (double)page;
            fclose(f);
        }
    }
    closedir(d);
}

/* ---- the client ------------------------------------------------------------- */

/* wrk's done() hook: its own counts and latency histogram, one line. */
static const char wrk_lua[] =
    "done = function(summary, latency, requests)\n"
    "  local e = summary.errors\n"
    "  io.write(string.format('ptbench %d %d %d %d %d %d %d %d %d %d %d\\n',\n"
    "    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,\n"
    "    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max))\n"
    "end\n";

int http_wrk_start(int port, int conns, long secs, const char *lua, pid_t server_group,
                   struct http_wrk *w, char *why, size_t nwhy)
{
    char cfg[32], dur[32], url[64], to[24];
    snprintf(cfg, sizeof cfg, "%d", conns);
    snprintf(dur, sizeof dur, "%lds", secs);
    snprintf(to, sizeof to, "%lds", secs < 5 ? 5 : secs);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        snprintf(why, nwhy, "pipe: %s", strerror(errno));
        return -1;
    }
    double rss;
    *w = (struct http_wrk){.group = server_group, .conns = conns};
    http_group_usage(server_group, &w->cpu0, &w->sys0, &rss);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 2);
        execlp("wrk", "wrk", "-t1", "-c", cfg, "-d", dur, "--timeout", to, "-s", lua, url,
               (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        snprintf(why, nwhy, "fork: %s", strerror(errno));
        return -1;
    }
    w->pid = pid;
    w->fd = p[0];
    return 0;
}

int http_wrk_finish(struct http_wrk *w, struct rep *out, char *why, size_t nwhy)
{
    FILE *f = fdopen(w->fd, "r");
    char line[512];
    unsigned long long v[11];
    int got = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "ptbench %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10]) == 11)
            got = 1;
    if (f)
        fclose(f);
    else
        close(w->fd);
    int status;
    struct rusage ru;
    wait4(w->pid, &status, 0, &ru);
    double cpu1, sys1, rss;
    http_group_usage(w->group, &cpu1, &sys1, &rss);
    if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(why, nwhy, "wrk -c %d failed (status 0x%x)", w->conns, status);
        return -1;
    }
    *out = (struct rep){
        .ops = v[0],
        .elapsed_ns = (double)v[1] * 1e3,
        .errors = (double)(v[2] + v[3] + v[4] + v[5] + v[6]),
        .p50 = (double)v[7] * 1e3,
        .p99 = (double)v[8] * 1e3,
        .p999 = (double)v[9] * 1e3,
        .max = (double)v[10] * 1e3,
        .cpu_s = cpu1 - w->cpu0,
        .sys_s = sys1 - w->sys0,
        .rss_bytes = rss,
        .client_cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                        (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
    };
    return 0;
}

int http_wrk_run(int port, int conns, long secs, const char *lua, pid_t server_group,
                 struct rep *out, char *why, size_t nwhy)
{
    struct http_wrk w;
    if (http_wrk_start(port, conns, secs, lua, server_group, &w, why, nwhy) != 0)
        return -1;
    return http_wrk_finish(&w, out, why, nwhy);
}

/* ---- setting up a workload ---------------------------------------------------- */

static bool wanted(const struct options *o, const struct http_server *s)
{
    if (s->kind != SRV_PTIMER && s->kind != SRV_FLOOR)
        return o->peers;
    for (int i = 0; i < o->ndesigns; i++)
        if (strcmp(o->designs[i], s->name) == 0)
            return true;
    return o->ndesigns == 0;
}

int http_setup(struct report *r, const struct options *o, const char *workload,
               struct http_env *env, const struct http_server *run[HTTP_MAX_SERVERS])
{
    if (system("command -v wrk >/dev/null 2>&1") != 0) {
        report_note(r, "%s: skipped: wrk is not installed (apt-get install wrk)", workload);
        return 0;
    }
    /* wrk, the servers and the idle workload's client hold a descriptor
     * per connection: the hard limit raised where this may (root), then
     * the soft one to it; the servers inherit both */
    long most = 0;
    for (int i = 0; i < o->nhttp_conns; i++)
        most = o->http_conns[i] > most ? o->http_conns[i] : most;
    for (int i = 0; i < o->nidle_conns; i++)
        most = o->idle_conns[i] > most ? o->idle_conns[i] : most;
    rlim_t want = (rlim_t)(2 * most + 4096);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want &&
            setrlimit(RLIMIT_NOFILE, &(struct rlimit){want, want}) == 0)
            getrlimit(RLIMIT_NOFILE, &rl);
        if (rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
        if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want)
            report_note(r,
                        "%s: %llu descriptors a process at most here, under the %llu its "
                        "largest row wants",
                        workload, (unsigned long long)rl.rlim_cur, (unsigned long long)want);
    }
    snprintf(env->dir, sizeof env->dir, "%.400s/%s", o->out, workload);
    if (mkdir(env->dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "ptbench: cannot create %s: %s\n", env->dir, strerror(errno));
        return -1;
    }
    /* nginx wants its prefix absolute */
    if (realpath(env->dir, env->lua) && strlen(env->lua) < sizeof env->dir)
        memcpy(env->dir, env->lua, strlen(env->lua) + 1);
    snprintf(env->lua, sizeof env->lua, "%.512s/report.lua", env->dir);
    FILE *f = fopen(env->lua, "w");
    if (!f || fputs(wrk_lua, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "ptbench: cannot write %s\n", env->lua);
        return -1;
    }
    int n = 0;
    for (int i = 0; i < nhttp_servers && n < HTTP_MAX_SERVERS; i++) {
        const char *why = "";
        if (!wanted(o, &http_servers[i]))
            continue;
        if (!available(&http_servers[i], &why)) {
            report_note(r, "%s: %s skipped (%s)", workload, http_servers[i].name, why);
            continue;
        }
        run[n++] = &http_servers[i];
    }
    return n;
}

/* ---- one row ------------------------------------------------------------------ */

/* The floor is one thread with no idle timeout: a row at 1 P of http. */
static bool runs_in(const struct http_server *s, const struct http_cell *cell)
{
    return s->kind != SRV_FLOOR || (cell->procs == 1 && cell->idle_ms == 0);
}

void http_cell_run(struct report *r, const struct options *o, const struct workload *wl,
                   const struct http_env *env, const struct http_server *const *run, int nrun,
                   const struct http_cell *cell)
{
    if (cell->procs > sysconf(_SC_NPROCESSORS_ONLN))
        return; /* wrk needs a core too: more Ps than cores measure the kernel */
    static struct rep reps[HTTP_MAX_SERVERS][REPORT_MAXREPS];
    static struct hist pooled[HTTP_MAX_SERVERS];
    bool failed[HTTP_MAX_SERVERS] = {false};
    memset(pooled, 0, sizeof pooled);
    for (int k = 0; k < o->reps; k++)
        for (int j = 0; j < nrun; j++) {
            int si = (j + k) % nrun; /* the order turns each repetition */
            if (failed[si] || !runs_in(run[si], cell))
                continue;
            progress_rep(wl->name, cell->variant, cell->procs, run[si]->name, k + 1, o->reps);
            struct http_running srv;
            char why[768] = "";
            struct rep *out = &reps[si][k];
            memset(out, 0, sizeof *out);
            int rc = http_server_start(run[si], cell->procs, cell->conns, cell->idle_ms, env->dir,
                                       &srv, why, sizeof why);
            if (rc == 0) {
                rc = cell->rep(cell->ctx, &srv, out, &pooled[si], why, sizeof why);
                http_server_stop(&srv);
            }
            if (rc != 0) {
                progress_clear();
                report_note(r, "%s %s, %d P: %s failed: %s", wl->name, cell->variant, cell->procs,
                            run[si]->name, why);
                failed[si] = true;
            }
        }
    for (int si = 0; si < nrun; si++) {
        if (failed[si] || !runs_in(run[si], cell))
            continue;
        /* lateness pooled where the repetitions kept samples, else wrk's
         * quantiles, medians of the repetitions' */
        bool pool = atomic_load(&pooled[si].count) > 0;
        report_add(r, wl, cell->variant, run[si]->name, cell->procs, 0, reps[si], o->reps,
                   pool ? &pooled[si] : NULL,
                   ROW_INTERLEAVED | (run[si]->kind == SRV_FLOOR    ? ROW_REFERENCE
                                      : run[si]->kind == SRV_PTIMER ? 0
                                                                    : ROW_PEER));
        if (pool)
            report_distribution(r, wl, cell->variant, run[si]->name, cell->procs, &pooled[si]);
    }
}
