/* A repetition in a new process (this program, executed afresh), so that
 * its resident-size delta is not hidden by memory an earlier run freed to
 * the allocator: the memory workloads measure from a fresh process every
 * time. A fork alone is not fresh: the child inherits the allocator's
 * free pages, and TimerThread's tasks, placed in them, read 1.6 B per
 * timer after an rpc run instead of 64. */
#include "isolated.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef PTBENCH_HAVE_SCHED
#include "sched_bench.h"
#endif

/* One memory repetition of wl on the design named `name`. */
static int run_here(const struct workload *wl, const char *name, int nt,
                    const struct run_config *cfg, struct run_result *res)
{
    if (wl_in_sched(wl)) {
#ifdef PTBENCH_HAVE_SCHED
        const struct sched_design *d = sched_design_find(name);
        return d ? sched_run(wl, d, nt, cfg, res) : -1;
#else
        return -1;
#endif
    }
    const struct pt_engine *eng = engine_find(name);
    return eng ? workload_run(wl, eng, nt, cfg, res) : -1;
}

int isolated_main(char **argv)
{
    const struct workload *wl = workload_find(argv[2]);
    int nt = atoi(argv[4]), fd = atoi(argv[6]);
    long count = atol(argv[5]);
    /* Only the memory and burst workloads run here, and the count (of
     * timers, or of Gs) and the stack guard are all of the configuration
     * they read. */
    if (wl && !wl_in_sched(wl) && !engine_find(argv[3]))
        engine_load_inherited(); /* a design of the parent's --engine */
    struct run_config cfg = {.memory_timers = count, .memory_gs = count, .stack_guard = atoi(argv[7])};
    struct run_result *res = calloc(1, sizeof *res);
    struct rep r;
    int ok = wl && wl_isolated(wl) && nt >= 1 && count >= 1 && res &&
             run_here(wl, argv[3], nt, &cfg, res) == 0;
    if (ok)
        rep_of_result(res, &r);
    free(res); /* LeakSanitizer builds fail a process that leaks */
    return ok && write(fd, &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1;
}

/* Reads n bytes by `deadline` (CLOCK_MONOTONIC ns); what it read. */
static size_t read_until(int fd, void *buf, size_t n, pt_nanos deadline)
{
    size_t got = 0;
    while (got < n) {
        pt_nanos left = deadline - pt_nanotime();
        if (left <= 0)
            break;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        pt_nanos ms = left / 1000000 + 1;
        int rc = poll(&p, 1, ms > 60000 ? 60000 : (int)ms);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            break;
        ssize_t k = read(fd, (char *)buf + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    return got;
}

/* Forks with a pipe from the child: the child's pid with *wr its write end
 * and *rd the parent's read end; -errno when either fails, nothing left
 * open. */
static pid_t fork_piped(int *rd, int *wr)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -errno;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fd[0]);
        close(fd[1]);
        return -e;
    }
    if (pid == 0)
        close(fd[0]);
    else
        close(fd[1]);
    *rd = fd[0];
    *wr = fd[1];
    return pid;
}

/* Reads the child's len-byte answer by `deadline`, kills it if it is late,
 * and reaps it: the bytes read, with its wait status in *status and
 * whether it was killed for lateness in *hung. */
static size_t collect(pid_t pid, int rd, void *buf, size_t len, pt_nanos deadline, int *status,
                      bool *hung)
{
    size_t got = read_until(rd, buf, len, deadline);
    close(rd);
    *hung = got < len && pt_nanotime() >= deadline;
    if (*hung)
        kill(pid, SIGKILL);
    *status = 0;
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
    return got;
}

int run_isolated(const struct workload *wl, const char *design, int nt,
                 const struct run_config *cfg, long hang_s, struct rep *out)
{
    int rd = -1, wr = -1;
    pid_t pid = fork_piped(&rd, &wr);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        char nts[16], count[24], fds[16], guard[16];
        snprintf(nts, sizeof nts, "%d", nt);
        snprintf(guard, sizeof guard, "%d", cfg->stack_guard);
        snprintf(count, sizeof count, "%ld", wl_in_sched(wl) ? cfg->memory_gs : cfg->memory_timers);
        snprintf(fds, sizeof fds, "%d", wr);
        char *args[ISOLATED_ARGC + 1] = {
            "ptbench", ISOLATED_ARG, (char *)wl->name, (char *)design, nts, count, fds, guard, NULL};
        execv("/proc/self/exe", args);
        fprintf(stderr, "ptbench: cannot execute /proc/self/exe: %s\n", strerror(errno));
        _exit(127);
    }
    /* no limit (hang_s 0) for the designs built in: a million Gs take
     * what they take */
    pt_nanos deadline = hang_s ? pt_nanotime() + hang_s * (pt_nanos)1000000000 : INT64_MAX;
    int status;
    bool hung;
    size_t n = collect(pid, rd, out, sizeof *out, deadline, &status, &hung);
    return n == sizeof *out && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int run_forked(const struct workload *wl, const struct pt_engine *eng, int nt,
               const struct run_config *cfg, long hang_s, struct run_result *res, char *why,
               size_t n)
{
    int rd = -1, wr = -1;
    pid_t pid = fork_piped(&rd, &wr);
    if (pid < 0) {
        snprintf(why, n, "fork: %s", strerror((int)-pid));
        return -1;
    }
    if (pid == 0) {
        int rc = workload_run(wl, eng, nt, cfg, res);
        size_t off = 0;
        while (rc == 0 && off < sizeof *res) {
            ssize_t k = write(wr, (char *)res + off, sizeof *res - off);
            if (k <= 0)
                _exit(1);
            off += (size_t)k;
        }
        _exit(rc == 0 ? 0 : 3);
    }
    /* A repetition runs for its duration, or its ops: hang_s and twice
     * the duration past that is a hang. */
    pt_nanos limit = hang_s * (pt_nanos)1000000000 + 2 * cfg->duration;
    int status;
    bool hung;
    size_t got = collect(pid, rd, res, sizeof *res, pt_nanotime() + limit, &status, &hung);
    if (hung)
        snprintf(why, n, "hung: no result %.0f s after it started (killed)", (double)limit / 1e9);
    else if (WIFSIGNALED(status))
        snprintf(why, n, "crashed: killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
        snprintf(why, n, "failed: the engine did not start");
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got < sizeof *res)
        /* a sanitizer reports a crash and exits: its report is above */
        snprintf(why, n, "died: exit status %d, no result", WEXITSTATUS(status));
    else
        return 0;
    return -1;
}
