/* The descriptors of the fds Gs do I/O on (Go's pollDesc cache, and
 * internal/poll's FD.Init and the end of FD.Close), found by fd number.
 *
 * The table is process-wide, as fd numbers are: chunks of 1024
 * descriptors, made on first use and never freed. Never freeing is what
 * lets a netpoll event name its descriptor by pointer (udata) after the
 * netpoll has dropped its lock: an event for an fd closed since finds the
 * descriptor free, or registered anew, and at worst sends its Gs round
 * for one more try of their system call. Go keeps its pollDescs in a
 * cache that is never freed for the same reason.
 *
 * A descriptor's life: FREE -> OPEN on the first call on the fd (register
 * with the calling G's scheduler's netpoller, make the fd non-blocking)
 * -> CLOSING (pt_fd_close: new calls get -EBADF, waiters are woken) ->
 * FREE once the calls in flight have left and the registration is gone,
 * and then the fd is closed, with the lock let go: a new fd the kernel
 * gives the same number (it may, as soon as close(2) has begun) finds its
 * descriptor FREE, never closing, and registers without waiting out the
 * old socket's teardown. A call on the number made while its pt_fd_close
 * is in close(2) is a call on a closed fd, as in C: it may register the
 * old file, which the kernel then drops from the netpoller, and the
 * number's next file is not watched until its record is closed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/futex.h"
#include "base/lock.h"
#include "sched/fd.h"

#define CHUNK_SHIFT 10
#define CHUNK_LEN (1u << CHUNK_SHIFT)
#define NCHUNKS 1024u /* fds below 2^20, Linux's default nr_open */

static struct pt__fd *_Atomic chunks[NCHUNKS];

/* fd's descriptor; its chunk is made if `make` (NULL: out of range, not
 * made, or no memory). */
static struct pt__fd *slot(int fd, bool make)
{
    if (fd < 0 || (unsigned)fd >= CHUNK_LEN * NCHUNKS)
        return NULL;
    struct pt__fd *_Atomic *cp = &chunks[(unsigned)fd >> CHUNK_SHIFT];
    /* acquire: pairs with the CAS that published the chunk zeroed */
    struct pt__fd *c = atomic_load_explicit(cp, memory_order_acquire);
    if (!c && make) {
        struct pt__fd *n = pt__malloc(CHUNK_LEN * sizeof *n);
        if (!n)
            return NULL;
        memset(n, 0, CHUNK_LEN * sizeof *n); /* unlocked, FREE, no refs, empty sides */
        for (unsigned i = 0; i < CHUNK_LEN; i++)
            n[i].pollee.ready = pt__fd_ready;
        if (atomic_compare_exchange_strong_explicit(cp, &c, n, memory_order_acq_rel,
                                                    memory_order_acquire))
            c = n;
        else
            pt__free(n); /* another thread made it first */
    }
    return c ? &c[(unsigned)fd & (CHUNK_LEN - 1)] : NULL;
}

bool pt__fd_in_range(int fd)
{
    return fd >= 0 && (unsigned)fd < CHUNK_LEN * NCHUNKS;
}

struct pt__fd *pt__fd_find(int fd)
{
    return slot(fd, false);
}

/* FREE -> OPEN, registered with s (f->lock held). Go's FD.Init: an fd
 * the kernel cannot poll (epoll's EPERM: a regular file) is used with
 * plain system calls. What `known` says is not asked: a connection churn
 * makes one registration per connection, where each system call counts. */
static int do_register(struct pt__fd *f, pt_sched *s, int fd, unsigned known)
{
    int fl = O_NONBLOCK;
    if (!(known & PT__FD_KNOWN_NONBLOCK) && (fl = fcntl(fd, F_GETFL)) < 0)
        return -errno;
    /* nothing readable as of the registration but what its report says
     * (fd.h); no event moves seq while the record is not open */
    struct pt__fd_side *rd = &f->side[PT__FD_RD];
    atomic_store_explicit(&rd->idle, atomic_load_explicit(&rd->seq, memory_order_relaxed),
                          memory_order_relaxed);
    int err = pt_pollreg_open(s->np, &f->reg, fd, PT_POLL_READ | PT_POLL_WRITE, &f->pollee);
    if (err < 0 && err != -EPERM)
        return err;
    f->pollable = err == 0;
    if (f->pollable && !(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        err = -errno;
        pt_pollreg_close(&f->reg);
        return err;
    }
    int type;
    socklen_t len = sizeof type;
    f->sock = (known & PT__FD_KNOWN_SOCKET) ||
              getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0;
    atomic_store_explicit(&f->tcp, -1, memory_order_relaxed);
    f->s = s;
    if (f->pollable)
        atomic_fetch_add_explicit(&s->nfds, 1, memory_order_relaxed);
    atomic_store_explicit(&f->state, PT__FD_OPEN, memory_order_relaxed);
    return 0;
}

int pt__fd_acquire(pt_sched *s, int fd, struct pt__fd **out)
{
    return pt__fd_acquire_known(s, fd, 0, NULL, out);
}

int pt__fd_acquire_known(pt_sched *s, int fd, unsigned known, bool *registered,
                         struct pt__fd **out)
{
    if (fd < 0)
        return -EBADF;
    if ((unsigned)fd >= CHUNK_LEN * NCHUNKS)
        return -EINVAL;
    struct pt__fd *f = slot(fd, true);
    if (!f)
        return -ENOMEM;
    int err = 0;
    pt__lock(&f->lock);
    uint32_t st = atomic_load_explicit(&f->state, memory_order_relaxed);
    bool now = st == PT__FD_FREE;
    if (now)
        err = do_register(f, s, fd, known);
    else if (st == PT__FD_CLOSING)
        err = -EBADF;
    else if (f->s != s)
        err = -EINVAL; /* only its owner's netpoller reports it */
    if (err == 0)
        atomic_store_explicit(&f->refs, atomic_load_explicit(&f->refs, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    pt__unlock(&f->lock);
    if (err == 0)
        *out = f;
    if (registered)
        *registered = now && err == 0;
    return err;
}

void pt__fd_release(struct pt__fd *f)
{
    pt__lock(&f->lock);
    uint32_t refs = atomic_load_explicit(&f->refs, memory_order_relaxed) - 1;
    atomic_store_explicit(&f->refs, refs, memory_order_relaxed);
    bool last =
        refs == 0 && atomic_load_explicit(&f->state, memory_order_relaxed) == PT__FD_CLOSING;
    pt_g *closer = NULL;
    if (last) {
        closer = f->closer;
        f->closer = NULL;
    }
    pt__unlock(&f->lock);
    if (!last)
        return;
    /* The closer: a thread asleep on refs, or a G parked (exactly one
     * release brings refs to 0 once closing, since no call enters then) */
    pt__futex_wake(&f->refs, INT_MAX);
    if (closer && (!pt__g_claim(closer) || pt_ready(closer) != 0))
        pt__sched_bad(closer, "fd close");
}

/* park's commit: the G is published as the closer; let releases at it */
static bool unlock_commit(void *lock)
{
    pt__unlock(lock);
    return true;
}

int pt__fd_finish_close(struct pt__fd *f, int fd)
{
    /* Go's FD.Close waits (csema) for the calls in flight to leave: one
     * still inside read(2) would otherwise retry on whatever file the
     * kernel gives the number to next. */
    pt_g *g = pt_g_current();
    for (;;) {
        pt__lock(&f->lock);
        uint32_t refs = atomic_load_explicit(&f->refs, memory_order_relaxed);
        if (refs == 0)
            break; /* with the lock */
        if (g) {
            f->closer = g;
            pt__g_waits(g, PT__WAIT_FD, f, false);
            pt__park_until(g, unlock_commit, (void *)&f->lock, 0);
        } else {
            pt__unlock(&f->lock);
            pt__futex_wait(&f->refs, refs, 0);
        }
    }
    if (f->pollable) {
        /* before close(2), which may hand the number out at once; the
         * close tells epoll, when it drops the file's last descriptor */
        pt_pollreg_forget(&f->reg);
        atomic_fetch_sub_explicit(&f->s->nfds, 1, memory_order_relaxed);
    }
    f->s = NULL;
    atomic_store_explicit(&f->state, PT__FD_FREE, memory_order_relaxed);
    pt__unlock(&f->lock);
    /* Outside the lock: a socket's close(2) is the costly half of its life
     * (the stack's teardown), and the kernel frees the number early in it,
     * so another M's accept4 may already hold the number again and wait
     * to register it. The record is done with the old file: nothing here
     * reads it after close. Linux frees the fd even when close is
     * interrupted: EINTR is done. */
    return close(fd) < 0 && pt__errno() != EINTR ? -pt__errno() : 0;
}

void pt__fd_walk(void (*fn)(struct pt__fd *f, void *arg), void *arg)
{
    for (unsigned c = 0; c < NCHUNKS; c++) {
        struct pt__fd *chunk = atomic_load_explicit(&chunks[c], memory_order_acquire);
        for (unsigned i = 0; chunk && i < CHUNK_LEN; i++)
            fn(&chunk[i], arg);
    }
}

static void forget_one(struct pt__fd *f, void *arg)
{
    pt_sched *s = arg;
    if (atomic_load_explicit(&f->state, memory_order_relaxed) == PT__FD_FREE)
        return; /* a hint: one being registered now is another scheduler's */
    for (;;) {
        pt__lock(&f->lock);
        uint32_t st = atomic_load_explicit(&f->state, memory_order_relaxed);
        if (f->s != s || st != PT__FD_CLOSING)
            break;
        /* a thread's pt_fd_close still needs s: let it finish */
        pt__unlock(&f->lock);
        sched_yield();
    }
    if (f->s == s) {
        /* no G is left, so no call is in flight and none waits */
        if (f->pollable) {
            pt_pollreg_close(&f->reg);
            atomic_fetch_sub_explicit(&s->nfds, 1, memory_order_relaxed);
        }
        f->s = NULL;
        atomic_store_explicit(&f->state, PT__FD_FREE, memory_order_relaxed);
    }
    pt__unlock(&f->lock);
}

/* fds still registered (never pt_fd_close'd) would keep the netpoll
 * busy: they are unregistered and left open */
static void forget_sched(pt_sched *s)
{
    if (s->np)
        pt__fd_walk(forget_one, s);
}

const struct pt__service pt__fd_service = {.close = forget_sched};
