/* Bare registrations (pt_pollreg): events carry the registration and its
 * user data and no waiting descriptor; interest changes as a pt_pollfd's
 * does; after a close no new batch names the record, even while events for
 * its fd keep arriving and it is freed at once. */
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

#define R PT_POLL_READ
#define W PT_POLL_WRITE

/* The events of one wait (at most `timeout`) that name r, or'ed. */
static unsigned reg_events(pt_netpoll *np, pt_pollreg *r, void *udata, pt_nanos timeout)
{
    pt_poll_event ev[64];
    pt_nanos end = pt_nanotime() + timeout;
    unsigned seen = 0;
    do {
        pt_nanos left = end - pt_nanotime();
        int n = pt_netpoll_wait(np, left > 0 ? left : 0, ev, 64);
        CHECK(n >= 0);
        for (int i = 0; i < n; i++)
            if (ev[i].reg == r) {
                CHECK(ev[i].pd == NULL); /* no waiting descriptor behind it */
                CHECK(ev[i].udata == udata);
                CHECK_EQ(ev[i].fd, r->fd);
                seen |= ev[i].events;
            }
    } while (!seen && pt_nanotime() < end);
    return seen;
}

static void bare_events(enum np_kind b)
{
    watchdog(60);
    int before = count_fds();
    pt_netpoll *np = np_new(b, NULL);
    int fds[2];
    kind_socketpair.open(fds);
    pt_pollreg r;
    int tag;
    CHECK_EQ(pt_pollreg_open(np, &r, fds[0], 0, &tag), 0);
    kind_socketpair.put(fds[1]);
    CHECK_EQ(reg_events(np, &r, &tag, 0), 0); /* interest 0: nothing */
    CHECK_EQ(pt_pollreg_arm(&r, R), 0);       /* readable now: said once */
    CHECK_EQ(reg_events(np, &r, &tag, 5 * SEC) & (R | W), R);
    CHECK_EQ(reg_events(np, &r, &tag, 0), 0);
    CHECK_EQ(pt_pollreg_arm(&r, R | W), 0);
    CHECK_EQ(reg_events(np, &r, &tag, 5 * SEC) & (R | W), R | W);
    kind_socketpair.drain(fds[0]);
    kind_socketpair.put(fds[1]); /* a new edge */
    CHECK(reg_events(np, &r, &tag, 5 * SEC) & R);

    /* a pt_pollfd's events name its own registration */
    int fds2[2];
    kind_pipe.open(fds2);
    pt_pollfd pd;
    CHECK_EQ(pt_pollfd_open(np, &pd, fds2[0], R, &pd), 0);
    kind_pipe.put(fds2[1]);
    pt_poll_event ev[8];
    int n = 0;
    for (pt_nanos end = pt_nanotime() + 5 * SEC; n == 0 && pt_nanotime() < end;)
        CHECK((n = pt_netpoll_wait(np, SEC, ev, 8)) >= 0);
    CHECK_EQ(n, 1);
    CHECK(ev[0].pd == &pd && ev[0].reg == &pd.reg && ev[0].udata == &pd);
    CHECK_EQ(pt_pollfd_close(&pd), 0);
    kind_pipe.close(fds2);

    /* closed: the fd's new edges are nobody's, and it may be opened again */
    CHECK_EQ(pt_pollreg_close(&r), 0);
    kind_socketpair.put(fds[1]);
    CHECK_EQ(reg_events(np, &r, &tag, 20 * MS), 0);
    CHECK_EQ(pt_pollreg_open(np, &r, fds[0], R, NULL), 0);
    CHECK(reg_events(np, &r, NULL, 5 * SEC) & R);
    CHECK_EQ(pt_pollreg_close(&r), 0);
    kind_socketpair.close(fds);
    np_free(np);
    CHECK_EQ(count_fds(), before);
}

PT_TEST_BOTH_BACKENDS(bare_registration_events_carry_it_and_its_udata, bare_events)

/* Registrations closed and freed at once while a poller thread takes their
 * events and a writer keeps making them ready: the netpoll never touches
 * one after its close (ASan and TSan check the memory), and arms racing
 * the close either act before it or answer -EBADF. */
static void reg_close_under_events(enum np_kind b)
{
    const int rounds = 300;
    watchdog(300);
    pt_netpoll *np = np_new(b, NULL);
    struct poller p;
    poller_start(&p, np);
    int before = count_fds();
    for (int round = 0; round < rounds; round++) {
        struct churn c;
        atomic_init(&c.stop, 0);
        pt_pollreg *regs[16];
        for (int i = 0; i < 16; i++) {
            kind_pipe.open(c.fds[i]);
            regs[i] = malloc(sizeof *regs[i]);
            CHECK(regs[i]);
            memset(regs[i], 0, sizeof *regs[i]);
            CHECK_EQ(pt_pollreg_open(np, regs[i], c.fds[i][0], R, NULL), 0);
        }
        pthread_t th;
        CHECK_EQ(pthread_create(&th, NULL, churn_writer, &c), 0);
        for (int i = 0; i < 16; i++) {
            kind_pipe.drain(c.fds[i][0]);
            CHECK_EQ(pt_pollreg_arm(regs[i], i % 2 ? R : 0), 0);
            CHECK_EQ(pt_pollreg_close(regs[i]), 0);
            CHECK_EQ(pt_pollreg_arm(regs[i], R), -EBADF);
            CHECK_EQ(pt_pollreg_close(regs[i]), -EBADF);
            free(regs[i]);
        }
        atomic_store(&c.stop, 1);
        CHECK_EQ(pthread_join(th, NULL), 0);
        for (int i = 0; i < 16; i++)
            kind_pipe.close(c.fds[i]);
    }
    poller_stop(&p);
    CHECK_EQ(count_fds(), before);
    np_free(np);
}

PT_TEST_BOTH_BACKENDS(bare_registrations_closed_and_freed_while_events_arrive_are_safe,
                      reg_close_under_events)

/* Every event of waits lasting `timeout`, counted (any fd). */
static int all_events(pt_netpoll *np, pt_nanos timeout)
{
    pt_poll_event ev[8];
    int total = 0;
    for (pt_nanos end = pt_nanotime() + timeout; pt_nanotime() < end;) {
        int n = pt_netpoll_wait(np, 2 * MS, ev, 8);
        CHECK(n >= 0);
        total += n;
    }
    return total;
}

/* pt_pollreg_forget, then the fd closed: where the kernel keeps the file
 * (a dup holds it open), its events under the old registration are stale
 * and never handed out, and the same file registered again under the same
 * number works (on epoll its entry is still in the set); with the last
 * descriptor closed the number is free for a new file. */
static void forget_then_close(enum np_kind b)
{
    watchdog(60);
    int before = count_fds();
    pt_netpoll *np = np_new(b, NULL);
    int fds[2];
    kind_socketpair.open(fds);
    pt_pollreg r, r2;
    int tag, tag2;
    CHECK_EQ(pt_pollreg_open(np, &r, fds[0], R, &tag), 0);
    int d = dup(fds[0]);
    CHECK(d >= 0);
    CHECK_EQ(pt_pollreg_forget(&r), 0);
    CHECK_EQ(pt_pollreg_forget(&r), -EBADF);
    CHECK_EQ(pt_pollreg_arm(&r, R), -EBADF);
    int num = fds[0];
    CHECK_EQ(close(num), 0);
    kind_socketpair.put(fds[1]); /* an edge the kernel may still report under r's tag */
    CHECK_EQ(all_events(np, 20 * MS), 0);
    CHECK_EQ(dup2(d, num), num); /* the same file under the same number */
    CHECK_EQ(pt_pollreg_open(np, &r2, num, R, &tag2), 0);
    kind_socketpair.drain(num);
    kind_socketpair.put(fds[1]);
    CHECK(reg_events(np, &r2, &tag2, 5 * SEC) & R);
    CHECK_EQ(pt_pollreg_forget(&r2), 0);
    CHECK_EQ(close(num), 0);
    CHECK_EQ(close(d), 0); /* the file's last descriptor */
    /* a new file under the number */
    int fds2[2];
    kind_socketpair.open(fds2);
    if (fds2[0] != num) {
        CHECK_EQ(dup2(fds2[0], num), num);
        CHECK_EQ(close(fds2[0]), 0);
        fds2[0] = num;
    }
    CHECK_EQ(pt_pollreg_open(np, &r, num, R, &tag), 0);
    kind_socketpair.put(fds2[1]);
    CHECK(reg_events(np, &r, &tag, 5 * SEC) & R);
    CHECK_EQ(pt_pollreg_close(&r), 0);
    kind_socketpair.close(fds2);
    CHECK_EQ(close(fds[1]), 0);
    np_free(np);
    CHECK_EQ(count_fds(), before);
}

PT_TEST_BOTH_BACKENDS(forgotten_registration_then_close_leaves_no_live_entry, forget_then_close)
