/* Timed I/O on file descriptors for Gs (Go's internal/poll FD and the
 * runtime's pollDesc): try the system call, and on EAGAIN park the G on
 * the fd's side (read or write) until the netpoller reports the side
 * ready, the fd is closed, or the deadline passes, then try again.
 *
 * A side is Go's rg/wg, widened to several Gs: a list of parked Gs and a
 * sequence number that every readiness event moves (fdtab.c has the
 * descriptor). A G reads the number before its system call and parks only
 * if it has not moved by the time it is on the list, under the
 * descriptor's lock: an event that comes between the EAGAIN and the park
 * sends the G back to try again, so none is lost (what Go's READY state
 * is for; a number rather than a bit, because with several Gs one's
 * pollReset must not clear the readiness another still needs). An event
 * wakes every G on the side: edge-triggered readiness comes once, and
 * only the system call tells which of them it was for.
 *
 * A wake-up is a timed park's (park.c): the waker and the deadline race
 * for the park's wake token with pt__g_claim, and only the winner readies
 * the G, so it is readied once. A waker takes the G off the list whether
 * or not it wins; a G woken by its deadline takes itself off if it is
 * still there. The list node lives on the parked G's stack, which stays
 * put while the G is parked, and the G looks at it again only under the
 * lock, after the waker let go of it.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/lock.h"
#include "sched/fd.h"
#include "sched/sysio.h"

/* ---- parking on a side, waking a side ---------------------------------- */

static void unlink_waiter(struct pt__fd_side *sd, struct pt__fd_waiter *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        sd->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        sd->tail = w->prev;
    w->queued = false;
}

/* Takes every G off side sd (the lock held), adding those whose park this
 * caller claimed to `woken`, to be readied once the lock is dropped. */
static struct pt__fd_waiter *take_waiters(struct pt__fd_side *sd, struct pt__fd_waiter *woken)
{
    for (struct pt__fd_waiter *w = sd->head, *nx; w; w = nx) {
        nx = w->next;
        w->queued = false;
        if (pt__g_claim(w->g)) {
            w->woken = woken;
            woken = w;
        }
        /* else its deadline won: the deadline readies it */
    }
    sd->head = sd->tail = NULL;
    return woken;
}

static void ready_all(struct pt__fd_waiter *w)
{
    while (w) {
        /* w is on g's stack: read it before g may run */
        struct pt__fd_waiter *nx = w->woken;
        pt_g *g = w->g;
        if (pt_ready(g) != 0)
            pt__sched_bad(g, "fd wake");
        w = nx;
    }
}

static uint32_t side_seq(struct pt__fd *f, int side)
{
    /* acquire: the system call that follows is not done before this */
    return atomic_load_explicit(&f->side[side].seq, memory_order_acquire);
}

/* park's commit: the G is on the list; let wakers at it. */
static bool unlock_commit(void *lock)
{
    pt__unlock(lock);
    return true;
}

static bool expired(pt_nanos deadline)
{
    return deadline != 0 && pt__now(pt_sched_current()) >= deadline;
}

/* Whether f's scheduler had its descriptor calls cancelled. Read under
 * f's lock, which pt_sched_cancel_fds takes on every descriptor after
 * setting the flag: a G that queued itself first is woken by it, one
 * that comes after sees the flag. */
static bool cancelled(struct pt__fd *f)
{
    return atomic_load_explicit(&f->s->fds_cancelled, memory_order_relaxed) != 0;
}

/* Go's pollWait: parks the calling G on `side` of f until an event moves
 * the side past `seen`, f closes, or the deadline passes. 0: try the call
 * again; -ETIMEDOUT (never before the deadline); -EBADF (closing). */
static int wait_side(struct pt__fd *f, int side, uint32_t seen, pt_nanos deadline)
{
    if (expired(deadline))
        return -ETIMEDOUT; /* checked before blocking, as Go's netpollcheckerr */
    struct pt__fd_side *sd = &f->side[side];
    struct pt__fd_waiter w = {pt_g_current(), NULL, NULL, NULL, false};
    pt__lock(&f->lock);
    if (atomic_load_explicit(&f->state, memory_order_relaxed) != PT__FD_OPEN) {
        pt__unlock(&f->lock);
        return -EBADF;
    }
    if (cancelled(f)) {
        pt__unlock(&f->lock);
        return -ECANCELED;
    }
    if (atomic_load_explicit(&sd->seq, memory_order_relaxed) != seen) {
        pt__unlock(&f->lock);
        return 0; /* ready since the call (Go's READY): try again */
    }
    w.prev = sd->tail;
    w.queued = true;
    if (sd->tail)
        sd->tail->next = &w;
    else
        sd->head = &w;
    sd->tail = &w;
    /* The lock is released by the commit, once the G is off its stack:
     * from then on an event or a close may claim and ready it. true: the
     * deadline ended the park (or could not be armed: then it is early,
     * and the caller just tries again). */
    pt__g_waits(w.g, PT__WAIT_FD, f, false);
    bool timed = pt__park_until(w.g, unlock_commit, (void *)&f->lock, deadline);
    pt__lock(&f->lock);
    if (w.queued)
        unlink_waiter(sd, &w); /* the deadline woke it: nobody took it off */
    uint32_t st = atomic_load_explicit(&f->state, memory_order_relaxed);
    bool stop = cancelled(f);
    pt__unlock(&f->lock);
    if (st != PT__FD_OPEN)
        return -EBADF;
    if (stop)
        return -ECANCELED;
    if (timed && expired(deadline))
        return -ETIMEDOUT;
    return 0;
}

void pt__fd_ready(struct pt__pollee *pe, pt_sched *s, unsigned e)
{
    struct pt__fd *f = (struct pt__fd *)pe;
    if (!(e & (PT_POLL_READ | PT_POLL_WRITE))) /* hang-ups and errors come as both sides */
        return;
    struct pt__fd_waiter *woken = NULL;
    pt__lock(&f->lock);
    /* an event queued before a close, or for a registration since
     * replaced, is dropped; one for a descriptor registered again
     * with s only sends its Gs round once more */
    if (atomic_load_explicit(&f->state, memory_order_relaxed) == PT__FD_OPEN && f->s == s) {
        for (int side = PT__FD_RD; side <= PT__FD_WR; side++) {
            if (!(e & (side == PT__FD_RD ? PT_POLL_READ : PT_POLL_WRITE)))
                continue;
            struct pt__fd_side *sd = &f->side[side];
            atomic_store_explicit(&sd->seq,
                                  atomic_load_explicit(&sd->seq, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
            woken = take_waiters(sd, woken);
        }
    }
    pt__unlock(&f->lock);
    ready_all(woken);
}

/* ---- a call as a request on the P's ring (PT_FD_IO_URING) ------------------ */

/* Ends every request f's Gs have on rings (f's lock held): each completes,
 * cancelled, and its G sees why under the lock. A cancel the kernel does
 * not take at once is retried with the lock let go (it is taken again
 * before returning): no call enters f meanwhile (it is closing, or its
 * scheduler's calls are cancelled), and a request already asked to end
 * is not asked again. */
static void cancel_requests(struct pt__fd *f)
{
    for (;;) {
        struct pt__ring_cancel c;
        struct pt__uop *u = f->uops;
        while (u && pt__ring_cancel_start(u, &c) == 0)
            u = u->next;
        if (!u)
            return;
        pt__unlock(&f->lock);
        pt__ring_cancel_finish(&c);
        pt__lock(&f->lock);
    }
}

/* park's commit for a request: queued on this P's ring and listed on f,
 * unless f closed or the calls were cancelled since the call began (then
 * the G resumes at once with that answer). */
static bool ring_commit(void *arg)
{
    struct pt__uop *u = arg;
    struct pt__fd *f = u->f;
    pt__lock(&f->lock);
    int r = atomic_load_explicit(&f->state, memory_order_relaxed) != PT__FD_OPEN ? -EBADF
            : cancelled(f)                                                       ? -ECANCELED
                           : pt__ring_queue(pt__ring_here(), u);
    if (r == 0) {
        u->prev = NULL;
        u->next = f->uops;
        if (f->uops)
            f->uops->prev = u;
        f->uops = u;
        u->listed = true;
    } else {
        u->res = r;
    }
    pt__unlock(&f->lock);
    return r == 0;
}

/* One system call's worth of I/O as a request on the calling G's P's
 * ring: the count or the call's -errno; -EBADF, -ECANCELED or -ETIMEDOUT
 * when a close, a cancel or the deadline ended it; -EINTR to try again
 * (a deadline that could not be armed ended the park early); -EBUSY when
 * the ring took nothing (make the system call instead). */
static ssize_t ring_call(struct pt__uop *u, pt_nanos deadline)
{
    struct pt__fd *f = u->f;
    u->g = pt_g_current();
    u->listed = false;
    pt__g_waits(u->g, PT__WAIT_RING, f, false);
    pt__park_until(u->g, ring_commit, u, deadline);
    if (!u->listed)
        return u->res;
    pt__ring_settle(u);
    pt__lock(&f->lock);
    if (u->prev)
        u->prev->next = u->next;
    else
        f->uops = u->next;
    if (u->next)
        u->next->prev = u->prev;
    pt__ring_forget(u);
    uint32_t st = atomic_load_explicit(&f->state, memory_order_relaxed);
    bool stop = cancelled(f);
    pt__unlock(&f->lock);
    if (u->res != -ECANCELED && u->res != -EINTR)
        return u->res;
    return st != PT__FD_OPEN ? -EBADF : stop ? -ECANCELED : expired(deadline) ? -ETIMEDOUT : -EINTR;
}

/* Whether f's read side is known to have nothing at `seen` (fd.h's idle):
 * a pollable fd read with system calls (a ring's request waits for data
 * itself). */
static bool known_empty(struct pt__fd *f, uint32_t seen)
{
    return f->pollable && !(f->sock && pt__ring_here()) &&
           atomic_load_explicit(&f->side[PT__FD_RD].idle, memory_order_relaxed) == seen;
}

/* A read: on the P's ring for a socket in ring mode, else recv or read. The
 * count or -errno (fdio's loops: -EAGAIN waits for readiness, -EINTR
 * tries again). */
static ssize_t do_read(struct pt__fd *f, int fd, void *buf, size_t n, pt_nanos deadline)
{
    if (f->sock && pt__ring_here()) {
        struct pt__uop u = {.f = f, .fd = fd, .kind = PT__UOP_RECV, .buf = buf, .len = n};
        ssize_t r = ring_call(&u, deadline);
        if (r != -EBUSY)
            return r;
    }
    /* recv for a socket: the socket layer without read(2)'s file layer */
    ssize_t r = f->sock ? pt__sys_recv(fd, buf, n) : pt__sys_read(fd, buf, n);
    return r < 0 ? -pt__errno() : r;
}

/* A write of the k segments of win, as do_read. MSG_NOSIGNAL: a peer gone
 * is -EPIPE, not a SIGPIPE that kills the process (Go ignores SIGPIPE on
 * such fds). On a ring, a write is a request as a read is, though the
 * socket nearly always has room: the G parks, but the round's writes
 * and reads go in with one system call. */
static ssize_t do_write(struct pt__fd *f, int fd, struct iovec *win, int k, pt_nanos deadline)
{
    if (f->sock && pt__ring_here()) {
        struct pt__uop u = {.f = f,
                            .fd = fd,
                            .kind = k == 1 ? PT__UOP_SEND : PT__UOP_SENDMSG,
                            .buf = win[0].iov_base,
                            .len = win[0].iov_len,
                            .msg = {.msg_iov = win, .msg_iovlen = (size_t)k}};
        ssize_t r = ring_call(&u, deadline);
        if (r != -EBUSY)
            return r;
    }
    ssize_t w;
    if (k == 1)
        w = f->sock ? pt__sys_send(fd, win[0].iov_base, win[0].iov_len, MSG_NOSIGNAL)
                    : pt__sys_write(fd, win[0].iov_base, win[0].iov_len);
    else if (f->sock)
        w = pt__sys_sendmsg(fd, &(struct msghdr){.msg_iov = win, .msg_iovlen = (size_t)k},
                            MSG_NOSIGNAL);
    else
        w = pt__sys_writev(fd, win, k);
    return w < 0 ? -pt__errno() : w;
}

/* ---- the calls ------------------------------------------------------------- */

/* The descriptor of fd for a call from a G, referenced. */
static int enter_known(int fd, pt_nanos deadline, unsigned known, bool *registered,
                       struct pt__fd **f)
{
    if (deadline < 0)
        return -EINVAL;
    int r = pt__fd_acquire_known(pt_sched_current(), fd, known, registered, f);
    if (r == 0 && atomic_load_explicit(&pt_sched_current()->fds_cancelled, memory_order_acquire)) {
        /* acquire: pairs with pt_sched_cancel_fds's release store (the
         * flag is read again under the lock wherever the G would park) */
        pt__fd_release(*f);
        r = -ECANCELED;
    }
    return r;
}

static int enter(int fd, pt_nanos deadline, struct pt__fd **f)
{
    return enter_known(fd, deadline, 0, NULL, f);
}

ssize_t pt_fd_read(int fd, void *buf, size_t n, pt_nanos deadline)
{
    if (!pt_g_current())
        return -EPERM;
    if ((!buf && n > 0) || n > SSIZE_MAX)
        return -EINVAL;
    struct pt__fd *f;
    ssize_t r = enter(fd, deadline, &f);
    if (r < 0)
        return r;
    if (n == 0)
        r = 0; /* Go: a zero-byte read returns at once, not an EOF */
    else if (expired(deadline))
        r = -ETIMEDOUT; /* Go's pollReset: the deadline first, data or not */
    else
        for (;;) {
            uint32_t seen = side_seq(f, PT__FD_RD);
            if (known_empty(f, seen))
                r = -EAGAIN; /* no event since it had nothing: wait for one */
            else if ((r = do_read(f, fd, buf, n, deadline)) == -EINTR)
                continue;
            if (r == -EAGAIN)
                atomic_store_explicit(&f->side[PT__FD_RD].idle, seen, memory_order_relaxed);
            if (r != -EAGAIN || !f->pollable || (r = wait_side(f, PT__FD_RD, seen, deadline)) < 0)
                break;
        }
    pt__fd_release(f);
    return r;
}

/* How many of a write's segments one system call takes at most: the
 * caller's array is const, so the call's window (its first segment cut
 * by what went out) is a copy, on the G's small stack. */
#define WRITE_WINDOW 8

/* conn.Write over segments: all `total` bytes of iov[0..cnt) by the
 * deadline, counting in *done what went out. 0 or -errno. */
static int write_segments(struct pt__fd *f, int fd, const struct iovec *iov, int cnt, size_t total,
                          pt_nanos deadline, size_t *done)
{
    int r = expired(deadline) ? -ETIMEDOUT : 0;
    int idx = 0;    /* the first segment not yet all out */
    size_t off = 0; /* how much of it is */
    while (r == 0 && *done < total) {
        if (atomic_load_explicit(&f->state, memory_order_relaxed) != PT__FD_OPEN) {
            r = -EBADF; /* closed while the write still made progress */
            break;
        }
        while (iov[idx].iov_len == off) {
            idx++;
            off = 0;
        }
        struct iovec win[WRITE_WINDOW];
        int k = 0;
        for (int i = idx; i < cnt && k < WRITE_WINDOW; i++) {
            size_t skip = i == idx ? off : 0;
            if (iov[i].iov_len == skip)
                continue;
            win[k].iov_base = (char *)iov[i].iov_base + skip;
            win[k].iov_len = iov[i].iov_len - skip;
            k++;
        }
        uint32_t seen = side_seq(f, PT__FD_WR);
        ssize_t w = do_write(f, fd, win, k, deadline);
        if (w > 0) {
            *done += (size_t)w;
            /* walk past what went out */
            for (size_t left = (size_t)w; left > 0;) {
                size_t room = iov[idx].iov_len - off;
                if (left < room) {
                    off += left;
                    break;
                }
                left -= room;
                idx++;
                off = 0;
            }
        } else if (w == 0) {
            r = -EIO; /* nothing written and no error: Go's ErrUnexpectedEOF */
        } else if (w != -EINTR) {
            r = (int)w;
            if (r == -EAGAIN && f->pollable)
                r = wait_side(f, PT__FD_WR, seen, deadline);
        }
    }
    return r;
}

ssize_t pt_fd_writev(int fd, const struct iovec *iov, int iovcnt, pt_nanos deadline,
                     size_t *written)
{
    size_t done = 0;
    if (written)
        *written = 0;
    if (!pt_g_current())
        return -EPERM;
    if (iovcnt < 0 || iovcnt > IOV_MAX || (!iov && iovcnt > 0))
        return -EINVAL;
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++) {
        if ((!iov[i].iov_base && iov[i].iov_len > 0) || iov[i].iov_len > SSIZE_MAX - total)
            return -EINVAL;
        total += iov[i].iov_len;
    }
    struct pt__fd *f;
    ssize_t r = enter(fd, deadline, &f);
    if (r < 0)
        return r;
    r = write_segments(f, fd, iov, iovcnt, total, deadline, &done);
    pt__fd_release(f);
    if (written)
        *written = done;
    return r < 0 ? r : (ssize_t)total;
}

ssize_t pt_fd_write(int fd, const void *buf, size_t n, pt_nanos deadline)
{
    struct iovec one = {(void *)buf, n};
    return pt_fd_writev(fd, &one, 1, deadline, NULL);
}

/* Go's newTCPConn gives a TCP connection TCP_NODELAY: a request/response
 * protocol wants its small writes sent now, not held for the last one's
 * ack. Linux copies the option from the listener into each connection
 * its handshake completes, so the listener gets it once, at its first
 * accept, and from then on only the connections already queued then need
 * it set on their own. f->tcp: -1 not asked yet; 0 not TCP; 1 TCP, set on
 * the listener, connections set one by one; 2 TCP, and an accept has
 * found the queue empty since it was set: every connection after that
 * has it from the listener. Relaxed: each step is stored by whoever
 * learns it, and a late reader only sets the option once more. */
enum { NODELAY_UNKNOWN = -1, NODELAY_NOT_TCP, NODELAY_EACH, NODELAY_INHERITED };

static signed char listener_nodelay(struct pt__fd *f, int lfd)
{
    signed char tcp = atomic_load_explicit(&f->tcp, memory_order_relaxed);
    if (tcp == NODELAY_UNKNOWN) {
        int proto;
        socklen_t len = sizeof proto;
        tcp = f->sock && getsockopt(lfd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) == 0 &&
                      proto == IPPROTO_TCP
                  ? NODELAY_EACH
                  : NODELAY_NOT_TCP;
        if (tcp == NODELAY_EACH)
            (void)setsockopt(lfd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
        atomic_store_explicit(&f->tcp, tcp, memory_order_relaxed);
    }
    return tcp;
}

int pt_fd_accept(int lfd, struct sockaddr *sa, socklen_t *len, pt_nanos deadline)
{
    if (!pt_g_current())
        return -EPERM;
    if (sa && !len)
        return -EINVAL;
    struct pt__fd *f;
    int r = enter(lfd, deadline, &f);
    if (r < 0)
        return r;
    socklen_t len0 = len ? *len : 0;
    r = expired(deadline) ? -ETIMEDOUT : 0;
    while (r == 0) {
        uint32_t seen = side_seq(f, PT__FD_RD);
        /* read before the accept: see listener_nodelay */
        signed char nodelay = listener_nodelay(f, lfd);
        if (len)
            *len = len0;
        int nfd = accept4(lfd, sa, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (nfd >= 0) {
            /* registered with the listener's scheduler, as Go's newFD */
            struct pt__fd *nf;
            r = pt__fd_acquire_known(f->s, nfd, PT__FD_KNOWN_NONBLOCK | PT__FD_KNOWN_SOCKET,
                                     NULL, &nf);
            if (r < 0) {
                close(nfd);
                break;
            }
            pt__fd_release(nf);
            if (nodelay == NODELAY_EACH)
                (void)setsockopt(nfd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
            r = nfd;
            break;
        }
        r = -pt__errno();
        if (r == -EAGAIN && nodelay == NODELAY_EACH)
            atomic_store_explicit(&f->tcp, NODELAY_INHERITED, memory_order_relaxed);
        /* ECONNABORTED: the connection was reset in the queue; Go tries
         * the next one */
        if (r == -EINTR || r == -ECONNABORTED)
            r = 0;
        else if (r == -EAGAIN && f->pollable)
            r = wait_side(f, PT__FD_RD, seen, deadline);
    }
    pt__fd_release(f);
    return r;
}

/* Go's netFD.connect after an EINPROGRESS: wait until writable, then ask
 * the socket how the handshake went. `verify`: the descriptor was
 * registered before the connect, so a wake-up may come before the
 * handshake ends (its registration's own report, golang/go#14548,
 * #19289), and the peer's name confirms it, as Go does; registered after
 * the connect, its first write-ready event is the handshake's end. */
static int connect_wait(struct pt__fd *f, int fd, uint32_t seen, pt_nanos deadline, bool verify)
{
    for (;;) {
        int r = wait_side(f, PT__FD_WR, seen, deadline);
        if (r < 0)
            return r;
        seen = side_seq(f, PT__FD_WR);
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            return -pt__errno();
        if (err == EINPROGRESS || err == EALREADY || err == EINTR)
            continue;
        if (err == EISCONN || (err == 0 && !verify))
            return 0;
        if (err != 0)
            return -err;
        struct sockaddr_storage peer;
        socklen_t plen = sizeof peer;
        if (getpeername(fd, (struct sockaddr *)&peer, &plen) == 0)
            return 0;
        if (pt__errno() != ENOTCONN)
            return -pt__errno();
    }
}

static bool connect_pending(int r)
{
    return r == -EINPROGRESS || r == -EALREADY || r == -EINTR;
}

/* pt_fd_connect once its arguments are checked. A socket whose first use
 * here is its connect is made non-blocking (unless `known` says it is:
 * PT__FD_KNOWN_NONBLOCK, pt_fd_dial's), connected, and only then
 * registered, in Go's and tokio's order: no wake-up can then come before
 * the handshake ends, and what connects is known to be a socket. One
 * already registered connects as it is. */
static int connect_fd(int fd, const struct sockaddr *sa, socklen_t len, pt_nanos deadline,
                      unsigned known)
{
    struct pt__fd *f0 = pt__fd_find(fd);
    bool first = !f0 || atomic_load_explicit(&f0->state, memory_order_relaxed) == PT__FD_FREE;
    /* a record not open takes no event: its seq holds until registered */
    uint32_t seen = f0 ? side_seq(f0, PT__FD_WR) : 0;
    int r = 0;
    if (first) {
        int fl = known & PT__FD_KNOWN_NONBLOCK ? O_NONBLOCK : fcntl(fd, F_GETFL);
        if (fl < 0 || (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0))
            return -pt__errno();
        r = connect(fd, sa, len) < 0 ? -pt__errno() : 0;
        if (r != 0 && !connect_pending(r))
            return r == -EISCONN ? 0 : r;
    }
    struct pt__fd *f;
    bool registered = false;
    int e = enter_known(fd, deadline, first ? PT__FD_KNOWN_NONBLOCK | PT__FD_KNOWN_SOCKET : 0,
                        &registered, &f);
    if (e < 0)
        return e;
    if (!first) {
        seen = side_seq(f, PT__FD_WR);
        r = connect(fd, sa, len) < 0 ? -pt__errno() : 0;
    }
    if (r == -EISCONN)
        r = 0;
    else if (connect_pending(r) && f->pollable)
        r = connect_wait(f, fd, seen, deadline, !registered);
    pt__fd_release(f);
    return r;
}

/* What pt_fd_connect and pt_fd_dial refuse before any system call; `bad`:
 * an argument of the caller's own that is wrong. */
static int connect_refused(const struct sockaddr *sa, pt_nanos deadline, bool bad)
{
    if (!pt_g_current())
        return -EPERM;
    if (!sa || deadline < 0 || bad)
        return -EINVAL;
    if (expired(deadline))
        return -ETIMEDOUT; /* Go's Dial does not start past its deadline */
    return 0;
}

int pt_fd_connect(int fd, const struct sockaddr *sa, socklen_t len, pt_nanos deadline)
{
    int err = connect_refused(sa, deadline, fd >= 0 && !pt__fd_in_range(fd));
    return err < 0 ? err : connect_fd(fd, sa, len, deadline, 0);
}

int pt_fd_dial(int type, const struct sockaddr *sa, socklen_t len, pt_nanos deadline)
{
    int err = connect_refused(sa, deadline,
                              len < (socklen_t)sizeof(sa_family_t) ||
                                  (type & (SOCK_NONBLOCK | SOCK_CLOEXEC)));
    if (err < 0)
        return err;
    /* made non-blocking, as Go's sysSocket makes its sockets: the record
     * is registered without asking the kernel what it already said */
    int fd = socket(sa->sa_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -pt__errno();
    int r = pt__fd_in_range(fd) ? connect_fd(fd, sa, len, deadline, PT__FD_KNOWN_NONBLOCK)
                                : -EMFILE;
    if (r < 0) {
        pt_fd_close(fd);
        return r;
    }
    return fd;
}

int pt_fd_close(int fd)
{
    if (fd < 0)
        return -EBADF;
    struct pt__fd *f = pt__fd_find(fd);
    if (f) {
        pt__lock(&f->lock);
        uint32_t st = atomic_load_explicit(&f->state, memory_order_relaxed);
        if (st == PT__FD_CLOSING) {
            pt__unlock(&f->lock);
            return -EBADF; /* Go's ErrFileClosing: another close is under way */
        }
        if (st == PT__FD_OPEN) {
            /* Go's pollUnblock: no call enters from now on, and the Gs
             * parked here wake to see the close */
            atomic_store_explicit(&f->state, PT__FD_CLOSING, memory_order_relaxed);
            struct pt__fd_waiter *woken = take_waiters(&f->side[PT__FD_RD], NULL);
            woken = take_waiters(&f->side[PT__FD_WR], woken);
            cancel_requests(f);
            pt__unlock(&f->lock);
            ready_all(woken);
            return pt__fd_finish_close(f, fd);
        }
        pt__unlock(&f->lock);
    }
    /* never registered here: a plain close */
    return close(fd) < 0 && pt__errno() != EINTR ? -pt__errno() : 0;
}

/* ---- cancelling every call: how a server's Gs are told to stop -------- */

static void cancel_one(struct pt__fd *f, void *arg)
{
    pt_sched *s = arg;
    /* the lock even on a FREE one: a G registering it now checks the flag
     * under the lock after us, or is on a side list before we look */
    pt__lock(&f->lock);
    struct pt__fd_waiter *woken = NULL;
    if (f->s == s && atomic_load_explicit(&f->state, memory_order_relaxed) == PT__FD_OPEN) {
        woken = take_waiters(&f->side[PT__FD_RD], NULL);
        woken = take_waiters(&f->side[PT__FD_WR], woken);
        cancel_requests(f);
    }
    pt__unlock(&f->lock);
    ready_all(woken);
}

int pt_sched_cancel_fds(pt_sched *s)
{
    if (!s || s->magic != PT__SCHED_MAGIC)
        return -EINVAL;
    /* release: pairs with enter's acquire load */
    atomic_store_explicit(&s->fds_cancelled, 1, memory_order_release);
    pt__fd_walk(cancel_one, s);
    return 0;
}
