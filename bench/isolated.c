/* A repetition in a new process (this program, executed afresh), so that
 * its resident-size delta is not hidden by memory an earlier run freed to
 * the allocator: the memory workload measures from a fresh process every
 * time. A fork alone is not fresh: the child inherits the allocator's
 * free pages, and TimerThread's tasks, placed in them, read 1.6 B per
 * timer after an rpc run instead of 64. */
#include "isolated.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int isolated_main(char **argv)
{
    const struct workload *wl = workload_find(argv[2]);
    const struct engine *eng = engine_find(argv[3]);
    int nt = atoi(argv[4]), fd = atoi(argv[6]);
    /* Only the memory workload runs here, and memory_timers is all of
     * the configuration it reads. */
    struct run_config cfg = {.memory_timers = atol(argv[5])};
    struct run_result *res = calloc(1, sizeof *res);
    struct rep r;
    if (!wl || wl->kind != WL_MEMORY || !eng || nt < 1 || cfg.memory_timers < 1 || !res ||
        workload_run(wl, eng, nt, &cfg, res) != 0)
        return 1;
    rep_of_result(res, &r);
    return write(fd, &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1;
}

int run_isolated(const struct workload *wl, const struct engine *eng, int nt,
                 const struct run_config *cfg, struct rep *out)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        char nts[16], timers[24], fds[16];
        snprintf(nts, sizeof nts, "%d", nt);
        snprintf(timers, sizeof timers, "%ld", cfg->memory_timers);
        snprintf(fds, sizeof fds, "%d", fd[1]);
        char *args[ISOLATED_ARGC + 1] = {
            "ptbench", ISOLATED_ARG, (char *)wl->name, (char *)eng->name, nts, timers, fds, NULL};
        execv("/proc/self/exe", args);
        fprintf(stderr, "ptbench: cannot execute /proc/self/exe: %s\n", strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    ssize_t n = read(fd[0], out, sizeof *out);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return n == (ssize_t)sizeof *out && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}
