/* Bad input returns a negative errno and changes nothing; nothing leaks;
 * the backend choice and the io_uring fallback. */
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "util.h"

#define R PT_POLL_READ
#define W PT_POLL_WRITE

static void bad_fds(enum np_kind k)
{
    pt_netpoll *np = np_new(k, NULL);
    int before = count_fds();
    pt_pollfd pd;
    CHECK_EQ(pt_pollfd_open(np, &pd, -1, R, NULL), -EBADF);
    CHECK_EQ(pt_pollfd_open(np, &pd, 1 << 20, R, NULL), -EBADF); /* never opened */
    int fds[2];
    kind_pipe.open(fds);
    kind_pipe.close(fds);
    CHECK_EQ(pt_pollfd_open(np, &pd, fds[0], R, NULL), -EBADF); /* closed */
    CHECK_EQ(count_fds(), before);
    np_free(np); /* nothing was left registered */
}

PT_TEST_BOTH_BACKENDS(unknown_and_closed_fds_return_ebadf, bad_fds)

static void double_register(enum np_kind k)
{
    watchdog(60);
    int fds[2];
    pt_pollfd a, b;
    pt_netpoll *np = fixture_open(k, NULL, &kind_pipe, fds, &a, R);
    CHECK_EQ(pt_pollfd_open(np, &b, fds[0], R | W, NULL), -EEXIST);
    /* a still works, and still alone */
    kind_pipe.put(fds[1]);
    CHECK(wait_event(np, &a, R, 5 * SEC) & R);
    CHECK_EQ(pt_pollfd_close(&a), 0);
    /* once closed, the fd may be registered again */
    CHECK_EQ(pt_pollfd_open(np, &b, fds[0], R, NULL), 0);
    CHECK(wait_event(np, &b, R, 5 * SEC) & R); /* still readable: reported */
    fixture_close(np, NULL, &kind_pipe, fds, &b);
}

PT_TEST_BOTH_BACKENDS(double_register_returns_eexist_and_changes_nothing, double_register)

void test_negative_deadlines_and_bad_modes_return_einval_and_change_nothing(void)
{
    int fds[2];
    pt_pollfd pd;
    pt_netpoll *np = fixture_open(NP_EPOLL, NULL, &kind_pipe, fds, NULL, 0);
    pt_timers *ts = pt_netpoll_timers(np);
    CHECK_EQ(pt_pollfd_open(np, &pd, fds[0], 0x10, NULL), -EINVAL);
    CHECK_EQ(pt_pollfd_open(np, &pd, fds[0], R, NULL), 0);

    CHECK_EQ(pt_pollfd_set_deadline(&pd, R, -1, NULL), -EINVAL);
    CHECK_EQ(pt_pollfd_set_deadline(&pd, R | W, -5 * SEC, NULL), -EINVAL);
    CHECK_EQ(pt_pollfd_set_deadline(&pd, 0, pt_nanotime() + SEC, NULL), -EINVAL);
    CHECK_EQ(pt_pollfd_set_deadline(&pd, 0x4, pt_nanotime() + SEC, NULL), -EINVAL);
    CHECK_EQ(pt_timers_len(ts), 0);
    CHECK_EQ(pt_pollfd_prepare(&pd, R | W), 0);
    CHECK_EQ(pd.rseq, 0);
    CHECK_EQ(pd.wseq, 0);

    CHECK_EQ(pt_pollfd_wait(&pd, R | W), -EINVAL);
    CHECK_EQ(pt_pollfd_wait(&pd, 0), -EINVAL);
    CHECK_EQ(pt_pollfd_wait(&pd, W), -EINVAL); /* not in the interest */
    CHECK_EQ(pt_pollfd_prepare(&pd, 0), -EINVAL);
    CHECK_EQ(pt_pollfd_prepare(&pd, 0x8), -EINVAL);
    CHECK_EQ(pt_pollfd_arm(&pd, 0x10), -EINVAL);
    CHECK_EQ(atomic_load(&pd.reg.events), R);

    pt_poll_event ev[2];
    CHECK_EQ(pt_netpoll_wait(np, 0, ev, 0), -EINVAL);
    CHECK_EQ(pt_netpoll_wait(np, 0, NULL, 2), -EINVAL);
    CHECK_EQ(pt_netpoll_wait(NULL, 0, ev, 2), -EINVAL);
    CHECK_EQ(pt_netpoll_break(NULL), -EINVAL);
    CHECK_EQ(pt_pollfd_open(NULL, &pd, fds[0], R, NULL), -EINVAL);
    CHECK_EQ(pt_pollfd_open(np, NULL, fds[0], R, NULL), -EINVAL);
    CHECK_EQ(pt_pollfd_prepare(NULL, R), -EINVAL);
    CHECK_EQ(pt_pollfd_wait(NULL, R), -EINVAL);
    CHECK_EQ(pt_pollfd_arm(NULL, R), -EINVAL);
    CHECK_EQ(pt_pollfd_set_deadline(NULL, R, 0, NULL), -EINVAL);
    CHECK_EQ(pt_pollfd_close(NULL), -EINVAL);
    CHECK_EQ(pt_netpoll_destroy(NULL), -EINVAL);

    pt_netpoll *bad = NULL;
    pt_netpoll_options o = {(enum pt_netpoll_backend)7, 0, NULL};
    CHECK_EQ(pt_netpoll_create(&bad, &o), -EINVAL);
    o = (pt_netpoll_options){PT_NETPOLL_EPOLL, 0x80, NULL};
    CHECK_EQ(pt_netpoll_create(&bad, &o), -EINVAL);
    CHECK_EQ(pt_netpoll_create(NULL, NULL), -EINVAL);
    CHECK(bad == NULL);

    fixture_close(np, NULL, &kind_pipe, fds, &pd);
}

void test_calls_on_a_closed_pollfd_return_ebadf(void)
{
    int fds[2];
    pt_pollfd pd;
    pt_netpoll *np = fixture_open(NP_EPOLL, NULL, &kind_pipe, fds, &pd, R);
    CHECK_EQ(pt_pollfd_close(&pd), 0);
    CHECK_EQ(pt_pollfd_close(&pd), -EBADF);
    CHECK_EQ(pt_pollfd_wait(&pd, R), -EBADF);
    CHECK_EQ(pt_pollfd_prepare(&pd, R), -EBADF);
    CHECK_EQ(pt_pollfd_arm(&pd, R), -EBADF);
    CHECK_EQ(pt_pollfd_set_deadline(&pd, R, pt_nanotime() + SEC, NULL), -EBADF);
    CHECK_EQ(pt_timers_len(pt_netpoll_timers(np)), 0);
    fixture_free(np, &kind_pipe, fds);
}

static void regular_file(enum np_kind k)
{
    pt_netpoll *np = np_new(k, NULL);
    char path[] = "/tmp/pt_netpoll_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
    pt_pollfd pd;
    CHECK_EQ(pt_pollfd_open(np, &pd, fd, R, NULL), -EPERM);
    close(fd);
    np_free(np);
}

PT_TEST_BOTH_BACKENDS(regular_file_returns_eperm, regular_file)

static void noop(void *arg, uintptr_t seq)
{
    (void)arg;
    (void)seq;
}

void test_destroy_refuses_while_descriptors_or_timers_remain(void)
{
    int fds[2];
    pt_pollfd pd;
    pt_netpoll *np = fixture_open(NP_EPOLL, NULL, &kind_pipe, fds, &pd, R);
    CHECK_EQ(pt_netpoll_destroy(np), -EBUSY);
    CHECK_EQ(pt_pollfd_prepare(&pd, R), 0); /* still usable */
    CHECK_EQ(pt_pollfd_close(&pd), 0);

    pt_timer t;
    pt_timer_init(&t, noop, NULL);
    CHECK_EQ(pt_timer_start(pt_netpoll_timers(np), &t, pt_nanotime() + 3600 * SEC, 0), 0);
    CHECK_EQ(pt_netpoll_destroy(np), -EBUSY);
    CHECK_EQ(pt_timer_stop_sync(&t), 1);
    fixture_free(np, &kind_pipe, fds);
}

static void cycles(enum np_kind k)
{
    watchdog(120);
    pt_netpoll *np = np_new(k, NULL);
    int before = count_fds();
    for (int i = 0; i < 2000; i++) {
        int fds[2];
        kind_socketpair.open(fds);
        pt_pollfd pd;
        CHECK_EQ(pt_pollfd_open(np, &pd, fds[0], i % 2 ? R : R | W, NULL), 0);
        CHECK_EQ(pt_pollfd_set_deadline(&pd, R | W, pt_nanotime() + (i % 3) * SEC, NULL), 0);
        if (i % 5 == 0)
            CHECK_EQ(pt_pollfd_arm(&pd, W), 0);
        if (i % 7 == 0)
            poll_once(np, &pd);
        CHECK_EQ(pt_pollfd_close(&pd), 0);
        kind_socketpair.close(fds);
    }
    poll_once(np, NULL); /* stale completions, if any */
    CHECK_EQ(count_fds(), before);
    CHECK_EQ(pt_timers_len(pt_netpoll_timers(np)), 0);
    np_free(np);
}

PT_TEST_BOTH_BACKENDS(open_close_cycles_leak_no_fds_or_timers, cycles)

/* ---- backend choice ---------------------------------------------------------- */

void test_pt_netpoll_variable_chooses_the_default_backend(void)
{
    pt_netpoll *np;
    CHECK_EQ(setenv("PT_NETPOLL", "epoll", 1), 0);
    CHECK_EQ(pt_netpoll_create(&np, NULL), 0);
    CHECK_EQ(pt_netpoll_backend(np), PT_NETPOLL_EPOLL);
    CHECK_EQ(pt_netpoll_fallback(np), 0);
    np_free(np);

    /* a value that names no backend: epoll, and the fallback says why */
    CHECK_EQ(setenv("PT_NETPOLL", "kqueue", 1), 0);
    CHECK_EQ(pt_netpoll_create(&np, NULL), 0);
    CHECK_EQ(pt_netpoll_backend(np), PT_NETPOLL_EPOLL);
    CHECK_EQ(pt_netpoll_fallback(np), -EINVAL);
    np_free(np);

    CHECK_EQ(setenv("PT_NETPOLL", "uring", 1), 0);
    CHECK_EQ(pt_netpoll_create(&np, NULL), 0);
    printf("PT_NETPOLL=uring runs %s (fallback %d)\n", pt_netpoll_name(np),
           pt_netpoll_fallback(np));
    CHECK_EQ(pt_netpoll_fallback(np) == 0, pt_netpoll_backend(np) == PT_NETPOLL_URING);
    /* the option wins over the variable */
    pt_netpoll *e;
    pt_netpoll_options o = {PT_NETPOLL_EPOLL, 0, NULL};
    CHECK_EQ(pt_netpoll_create(&e, &o), 0);
    CHECK_EQ(pt_netpoll_backend(e), PT_NETPOLL_EPOLL);
    np_free(e);
    np_free(np);

    CHECK_EQ(unsetenv("PT_NETPOLL"), 0);
    CHECK_EQ(pt_netpoll_create(&np, NULL), 0);
    CHECK_EQ(pt_netpoll_backend(np), PT_NETPOLL_EPOLL); /* the default */
    np_free(np);
}

/* A sandbox that refuses io_uring: a child process whose seccomp filter
 * fails io_uring_setup with EPERM (as Docker's default profile does). Asked
 * twice for io_uring, it runs epoll both times, says why through
 * pt_netpoll_fallback, and prints nothing (the library never does). */
static int install_uring_filter(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -errno;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        return -errno;
    return 0;
}

void test_io_uring_refused_by_a_sandbox_falls_back_to_epoll_and_says_why(void)
{
#if !defined(__x86_64__)
    printf("SKIP: the seccomp filter here is written for x86-64\n");
    exit(SKIP_CODE);
#endif
    watchdog(60);
    int errp[2];
    CHECK_EQ(pipe(errp), 0);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(errp[1], 2);
        close(errp[0]);
        if (install_uring_filter() < 0)
            _exit(SKIP_CODE);
        for (int i = 0; i < 2; i++) {
            pt_netpoll *np;
            pt_netpoll_options o = {PT_NETPOLL_URING, 0, NULL};
            if (pt_netpoll_create(&np, &o) != 0 || pt_netpoll_backend(np) != PT_NETPOLL_EPOLL)
                _exit(1);
#ifdef PT_HAVE_URING
            if (pt_netpoll_fallback(np) != -EPERM)
                _exit(2);
#else
            if (pt_netpoll_fallback(np) != -ENOSYS)
                _exit(2);
#endif
            pt_poll_event ev[1];
            if (pt_netpoll_wait(np, 1000, ev, 1) != 0 || pt_netpoll_destroy(np) != 0)
                _exit(1);
        }
        _exit(0);
    }
    close(errp[1]);
    char buf[4096];
    size_t len = 0;
    ssize_t r;
    while ((r = read(errp[0], buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = 0;
    close(errp[0]);
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    if (WEXITSTATUS(status) == SKIP_CODE) {
        printf("SKIP: cannot install a seccomp filter here\n");
        exit(SKIP_CODE);
    }
    printf("child's stderr: \"%s\"\n", buf);
    CHECK_EQ(WEXITSTATUS(status), 0);
    CHECK_EQ(len, 0);
}
