/* The sched scenario's I/O: Gs that read socketpairs with deadlines (a
 * short one, or none) while Gs and a plain thread write to them, beside
 * the timers and sleepers of sc_sched.c. A read with no deadline never
 * times out; one with a deadline times out never before it and within
 * the bound after it, and returns by then whatever the outcome. Beside
 * them, BURST_PAIRS pairs whose readers wait with no deadline (nothing
 * but their byte can wake them), to all of which the plain thread
 * writes at once now and then: more completions at once
 * than a ring's CQ holds (sc_sched.c makes it 16 entries), while the
 * other Gs keep the Ps busy. The watchdog: bytes written and not read,
 * on a pair whose reader has not moved for a second (or the bound, if
 * longer), are a stall, the scheduler having lost a wake-up; it is
 * reported with the scheduler's counters and every thread's state, once
 * per run. And a quiet pair, which nobody writes to until the stop: its
 * reader's timed reads all end by their timeouts (one in eight has no
 * deadline, and waits for the stop's byte).
 *
 * The fill pair: a G writes to it with deadlines, its buffers made small,
 * and the plain thread reads it only now and then, so that most writes
 * wait for room and many time out: on time (never before the deadline,
 * within the bound after), with all the bytes or an error, and the bytes
 * each call said went out (pt_fd_writev's count) are, in all, those the
 * reader got. The listener: a G accepts on it with deadlines (now and then
 * none), and the plain thread connects to it now and then: a timeout on
 * time, an untimed accept never timing out, each accepted descriptor a
 * real one, non-blocking and close-on-exec, and the connections made,
 * in all, those accepted (and those still queued at the end).
 *
 * The plain thread pauses with pt_sleep and pt_sleep_until, which sleep a
 * thread that is not a G: never early, within the bound, and at once for
 * a duration of 0 or less. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "sc_sched.h"

#define STALL_NS (1000 * SS_MS)
#define BURST_PAIRS 48
#define BURST_EVERY 16 /* of the plain thread's writes, one a burst */

struct ss_io {
    struct ss *ss;
    int sv[2]; /* the reader's end, the writers' */
    atomic_ullong written, read;
    uint64_t rng, wrng; /* the reader's, the writer's: each G its own */
    /* the watchdog's (main thread): the read count it last saw move, and
     * when; or when it last found nothing pending */
    unsigned long long seen_read;
    pt_nanos seen_at;
    bool burst; /* one of the BURST_PAIRS: no deadline, written in bursts */
    bool quiet; /* the last pair: written only at the stop, its reads time out */
};

#define FILL_BUF 4096   /* the fill pair's SO_SNDBUF and SO_RCVBUF (the kernel doubles them) */
#define FILL_EVERY 16   /* of the plain thread's rounds, one drains the fill pair */
#define CONNECT_EVERY 6 /* ... and one connects to the listener */
#define BACKLOG 4       /* connections not yet accepted, at most */

struct ss_ios {
    struct ss *ss;
    struct ss_io *io;
    int n, nplain; /* pairs: nplain plain ones, the burst pairs, the quiet one */
    pthread_t outside;
    bool outside_started;
    atomic_int dumped;
    /* the fill pair: the writer G's end sv[1], the plain thread's sv[0] */
    int fill[2];
    atomic_ullong fill_sent, fill_read; /* bytes the writes said went out; read */
    uint64_t fill_rng;
    /* the listener, its address, connections made and accepted */
    int lfd;
    struct sockaddr_un laddr;
    socklen_t laddr_len;
    atomic_ullong connected, accepted;
    uint64_t accept_rng;
};

static struct ss_ios ios;

static void io_reader(void *arg)
{
    struct ss_io *m = arg;
    struct ss *ss = m->ss;
    char buf[256];
    while (!atomic_load_explicit(&ss->stop, memory_order_relaxed)) {
        uint64_t x = pt__xorshift64(&m->rng);
        pt_nanos d = m->burst || x % (m->quiet ? 8 : 3) == 0
                         ? 0
                         : pt_nanotime() + (pt_nanos)(x % (3 * SS_MS));
        ssize_t r = pt_fd_read(m->sv[0], buf, sizeof buf, d);
        pt_nanos t = pt_nanotime();
        atomic_fetch_add_explicit(&ss->r->ops, 1, memory_order_relaxed);
        if (d && r != -ETIMEDOUT && stress_overdue(ss->r, d, t, ss->r->o->bound))
            stress_violation(ss->r, V_LATE, (long)(m - ios.io), 0,
                             "a timed read returning within the bound after its deadline",
                             "returned %zd %.3f ms after it", r, (double)(t - d) / 1e6);
        if (r == -ETIMEDOUT) {
            if (d == 0)
                stress_violation(ss->r, V_EARLY, (long)(m - ios.io), 0,
                                 "an untimed read never times out",
                                 "pt_fd_read with no deadline returned -ETIMEDOUT");
            else if (t < d)
                stress_violation(ss->r, V_EARLY, (long)(m - ios.io), 0,
                                 "a read's timeout at or after its deadline",
                                 "timed out %.3f ms early", (double)(d - t) / 1e6);
            else if (stress_overdue(ss->r, d, t, ss->r->o->bound))
                stress_violation(ss->r, V_LATE, (long)(m - ios.io), 0,
                                 "a read's timeout within the bound after its deadline",
                                 "timed out %.3f ms after it", (double)(t - d) / 1e6);
            continue;
        }
        if (r <= 0) {
            stress_violation(ss->r, V_ERROR, (long)(m - ios.io), 0, "a read to return data",
                             "pt_fd_read: %zd", r);
            break;
        }
        atomic_fetch_add_explicit(&m->read, (unsigned long long)r, memory_order_relaxed);
    }
    atomic_fetch_sub(&ss->alive, 1);
}

/* Writes a few bytes now and then, with a deadline (a full buffer waits). */
static void io_writer(void *arg)
{
    struct ss_io *m = arg;
    struct ss *ss = m->ss;
    static const char bytes[64] = {0};
    while (!atomic_load_explicit(&ss->stop, memory_order_relaxed)) {
        uint64_t x = pt__xorshift64(&m->wrng);
        pt_sleep((pt_nanos)(x % (2 * SS_MS)));
        size_t n = 1 + (x >> 32) % sizeof bytes;
        /* counted first: the reader may take them before the write returns */
        atomic_fetch_add_explicit(&m->written, n, memory_order_relaxed);
        ssize_t w = pt_fd_write(m->sv[1], bytes, n, pt_nanotime() + 50 * SS_MS);
        if (w < (ssize_t)n)
            atomic_fetch_sub_explicit(&m->written, n - (w > 0 ? (size_t)w : 0),
                                      memory_order_relaxed);
    }
    atomic_fetch_sub(&ss->alive, 1);
}

/* A timed call that returned r at t, its deadline d: a timeout never
 * before the deadline, and whatever the outcome, a return within the
 * bound after it. what: "write", "accept". */
static void io_timed(struct ss *ss, long obj, uint64_t n, const char *what, pt_nanos d, pt_nanos t,
                     long r)
{
    struct stress_run *r0 = ss->r;
    if (r == -ETIMEDOUT && t < d)
        stress_violation(r0, V_EARLY, obj, n, "a timeout at or after the deadline",
                         "%s timed out %.3f ms early", what, (double)(d - t) / 1e6);
    else if (stress_overdue(r0, d, t, r0->o->bound))
        stress_violation(r0, V_LATE, obj, n,
                         "a timed call returning within the bound after its deadline",
                         "%s returned %ld %.3f ms after it", what, r, (double)(t - d) / 1e6);
}

/* Writes to the fill pair with short deadlines; the plain thread drains
 * it only now and then, so the writes wait for room and many time out. */
static void io_filler(void *arg)
{
    struct ss *ss = arg;
    static const char bytes[FILL_BUF] = {0};
    long obj = ios.n; /* the pair after the others */
    uint64_t n = 0;
    while (!atomic_load_explicit(&ss->stop, memory_order_relaxed)) {
        uint64_t x = pt__xorshift64(&ios.fill_rng);
        size_t len = 1 + x % sizeof bytes;
        pt_nanos d = pt_nanotime() + 100000 + (pt_nanos)((x >> 16) % (3 * SS_MS));
        size_t done = 0;
        ssize_t w = pt_fd_writev(ios.fill[1], &(struct iovec){(void *)bytes, len}, 1, d, &done);
        pt_nanos t = pt_nanotime();
        n++;
        atomic_fetch_add_explicit(&ss->r->ops, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&ios.fill_sent, done, memory_order_relaxed);
        io_timed(ss, obj, n, "write", d, t, (long)w);
        if (w >= 0 && ((size_t)w != len || done != len))
            stress_violation(ss->r, V_ERROR, obj, n, "a write of all n bytes, or an error",
                             "pt_fd_writev of %zu bytes returned %zd, %zu written", len, w, done);
        else if (w < 0 && w != -ETIMEDOUT)
            stress_violation(ss->r, V_ERROR, obj, n, "a write to succeed or time out",
                             "pt_fd_writev: %zd", w);
        else if (w < 0 && done > len)
            stress_violation(ss->r, V_ERROR, obj, n, "a timed-out write's count within its length",
                             "%zu of %zu bytes written", done, len);
        if ((x >> 40) % 8 == 0)
            pt_sleep((pt_nanos)((x >> 44) % (2 * SS_MS)));
    }
    atomic_fetch_sub(&ss->alive, 1);
}

/* Accepts on the listener with short deadlines (one time in eight none:
 * then only a connection ends the call, and it never times out). */
static void io_acceptor(void *arg)
{
    struct ss *ss = arg;
    long obj = ios.n + 1;
    uint64_t n = 0;
    while (!atomic_load_explicit(&ss->stop, memory_order_relaxed)) {
        uint64_t x = pt__xorshift64(&ios.accept_rng);
        pt_nanos d = x % 8 == 0 ? 0 : pt_nanotime() + 100000 + (pt_nanos)((x >> 8) % (3 * SS_MS));
        int fd = pt_fd_accept(ios.lfd, NULL, NULL, d);
        pt_nanos t = pt_nanotime();
        n++;
        atomic_fetch_add_explicit(&ss->r->ops, 1, memory_order_relaxed);
        if (d)
            io_timed(ss, obj, n, "accept", d, t, fd);
        if (fd >= 0) {
            atomic_fetch_add(&ios.accepted, 1);
            int fl = fcntl(fd, F_GETFL), fdf = fcntl(fd, F_GETFD), type = 0;
            socklen_t tl = sizeof type;
            if (fl < 0 || fdf < 0 || !(fl & O_NONBLOCK) || !(fdf & FD_CLOEXEC) ||
                getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_STREAM)
                stress_violation(ss->r, V_ERROR, obj, n,
                                 "an accepted stream socket, non-blocking and close-on-exec",
                                 "descriptor %d: flags %#x, fd flags %#x, type %d", fd, fl, fdf,
                                 type);
            int rc = pt_fd_close(fd);
            if (rc != 0)
                stress_violation(ss->r, V_ERROR, obj, n, "pt_fd_close of an accepted descriptor",
                                 "%d", rc);
        } else if (fd == -ETIMEDOUT && d == 0) {
            stress_violation(ss->r, V_EARLY, obj, n, "an untimed accept never times out",
                             "pt_fd_accept with no deadline returned -ETIMEDOUT");
        } else if (fd != -ETIMEDOUT) {
            stress_violation(ss->r, V_ERROR, obj, n, "an accept to succeed or time out",
                             "pt_fd_accept: %d", fd);
        }
    }
    atomic_fetch_sub(&ss->alive, 1);
}

/* The plain thread's pause: pt_sleep or pt_sleep_until from a thread that
 * is not a G, never early, within the bound (at once for d <= 0). */
static void outside_sleep(struct ss *ss, uint64_t x, uint64_t n)
{
    pt_nanos d;
    switch (x % 16) {
    case 0:
        d = 0;
        break;
    case 1:
        d = -(pt_nanos)((x >> 8) % SS_MS) - 1;
        break;
    default:
        d = 50000 + (pt_nanos)((x >> 8) % (3 * SS_MS));
        break;
    }
    pt_nanos t0 = pt_nanotime(), until = t0 + (d > 0 ? d : 0);
    bool rel = (x >> 4) & 1;
    int rc = rel ? pt_sleep(d) : pt_sleep_until(t0 + d);
    pt_nanos t1 = pt_nanotime();
    atomic_fetch_add_explicit(&ss->r->ops, 1, memory_order_relaxed);
    const char *call = rel ? "pt_sleep" : "pt_sleep_until";
    if (rc != 0)
        stress_violation(ss->r, V_ERROR, -1, n, "0 from a plain thread's sleep", "%s: %d", call,
                         rc);
    if (t1 < until)
        stress_violation(ss->r, V_EARLY, -1, n,
                         "a plain thread's sleep returning at or after its deadline",
                         "%s(%.3f ms) returned %.3f ms early", call, (double)d / 1e6,
                         (double)(until - t1) / 1e6);
    else if (stress_overdue(ss->r, until, t1, ss->r->o->bound))
        stress_violation(ss->r, V_LATE, -1, n,
                         d > 0 ? "a plain thread's sleep returning within the bound"
                               : "a plain thread's sleep of 0 or less returning at once",
                         "%s(%.3f ms) returned %.3f ms after its deadline", call, (double)d / 1e6,
                         (double)(t1 - until) / 1e6);
}

/* The plain thread's reads of the fill pair: all it holds. */
static void fill_drain(void)
{
    char buf[4096];
    ssize_t r;
    while ((r = read(ios.fill[0], buf, sizeof buf)) > 0)
        atomic_fetch_add_explicit(&ios.fill_read, (unsigned long long)r, memory_order_relaxed);
}

/* A connection to the listener, closed at once (the accept still gets
 * it), while fewer than BACKLOG wait. */
static void outside_connect(void)
{
    if (ios.lfd < 0 || atomic_load(&ios.connected) - atomic_load(&ios.accepted) >= BACKLOG)
        return;
    int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c < 0)
        return;
    if (connect(c, (struct sockaddr *)&ios.laddr, ios.laddr_len) == 0)
        atomic_fetch_add(&ios.connected, 1);
    close(c);
}

/* A plain thread writing to the odd pairs: readiness from outside the
 * scheduler, as a network's is. */
static void *io_outside(void *arg)
{
    struct ss *ss = arg;
    uint64_t rng = 0x9e3779b97f4a7c15ull, n = 0;
    while (!atomic_load_explicit(&ss->stop, memory_order_relaxed)) {
        uint64_t x = pt__xorshift64(&rng);
        outside_sleep(ss, pt__xorshift64(&rng), ++n);
        if ((x >> 24) % FILL_EVERY == 0)
            fill_drain();
        if ((x >> 32) % CONNECT_EVERY == 0)
            outside_connect();
        if ((x >> 8) % BURST_EVERY == 0) {
            for (int i = ios.nplain; i < ios.n; i++) {
                if (ios.io[i].quiet)
                    continue;
                atomic_fetch_add_explicit(&ios.io[i].written, 1, memory_order_relaxed);
                if (write(ios.io[i].sv[1], "b", 1) != 1)
                    atomic_fetch_sub_explicit(&ios.io[i].written, 1, memory_order_relaxed);
            }
            continue;
        }
        struct ss_io *m = &ios.io[((x >> 16) % (uint64_t)ios.nplain) | 1];
        if (m - ios.io >= ios.nplain)
            continue;
        atomic_fetch_add_explicit(&m->written, 1, memory_order_relaxed);
        if (write(m->sv[1], "o", 1) != 1)
            atomic_fetch_sub_explicit(&m->written, 1, memory_order_relaxed);
    }
    return NULL;
}

/* The fill pair (small buffers) and the listener (an abstract AF_UNIX
 * address the kernel picks). False, with a violation, if either fails. */
static bool io_make_extra(struct ss *ss)
{
    int small = FILL_BUF;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, ios.fill) != 0) {
        ios.fill[0] = ios.fill[1] = -1;
        stress_violation(ss->r, V_ERROR, ios.n, 0, "a socketpair", "%s", strerror(errno));
        return false;
    }
    (void)setsockopt(ios.fill[1], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    (void)setsockopt(ios.fill[0], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    ios.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ios.laddr_len = sizeof ios.laddr;
    /* binding only the family: the kernel gives the socket an abstract
     * address of its own */
    if (ios.lfd < 0 ||
        bind(ios.lfd, (struct sockaddr *)&(sa_family_t){AF_UNIX}, sizeof(sa_family_t)) != 0 ||
        listen(ios.lfd, 2 * BACKLOG) != 0 ||
        getsockname(ios.lfd, (struct sockaddr *)&ios.laddr, &ios.laddr_len) != 0) {
        stress_violation(ss->r, V_ERROR, ios.n + 1, 0, "a listening socket", "%s", strerror(errno));
        if (ios.lfd >= 0)
            close(ios.lfd);
        ios.lfd = -1;
        return false;
    }
    return true;
}

bool ss_io_start(struct ss *ss, int nplain, bool (*go)(struct ss *, void (*)(void *), void *))
{
    memset(&ios, 0, sizeof ios);
    ios.ss = ss;
    ios.fill[0] = ios.fill[1] = ios.lfd = -1;
    ios.fill_rng = ss->r->o->seed * 0xbf58476d1ce4e5b9ull + 0x1234567;
    ios.accept_rng = ss->r->o->seed * 0x94d049bb133111ebull + 0x7654321;
    int n = nplain + BURST_PAIRS + 1; /* the last: the quiet pair */
    ios.io = calloc((size_t)n, sizeof *ios.io);
    if (!ios.io)
        abort();
    ios.n = n;
    ios.nplain = nplain;
    pt_nanos now = pt_nanotime();
    for (int i = 0; i < n; i++) {
        struct ss_io *m = &ios.io[i];
        m->ss = ss;
        m->rng = ss->r->o->seed * 0x94d049bb133111ebull + (uint64_t)i * 0xbf58476d1ce4e5b9ull + 1;
        m->wrng = m->rng ^ 0x5bd1e995;
        m->seen_at = now;
        m->burst = i >= nplain && i < n - 1;
        m->quiet = i == n - 1;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, m->sv) != 0) {
            stress_violation(ss->r, V_ERROR, i, 0, "a socketpair", "%s", strerror(errno));
            m->sv[0] = m->sv[1] = -1;
            ios.n = i;
            ios.nplain = i < nplain ? i : nplain;
            return false;
        }
    }
    if (!io_make_extra(ss))
        return false;
    for (int i = 0; i < n; i++)
        if (!go(ss, io_reader, &ios.io[i]) ||
            (i % 2 == 0 && i < nplain && !go(ss, io_writer, &ios.io[i])))
            return false;
    if (!go(ss, io_filler, ss) || !go(ss, io_acceptor, ss))
        return false;
    ios.outside_started = pthread_create(&ios.outside, NULL, io_outside, ss) == 0;
    return true;
}

/* Every thread of the process: its name, state and kernel wait channel. */
static void dump_threads(FILE *f)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[64] = "?", stat[512] = "", wchan[64] = "?";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *c = fopen(path, "r");
        if (c) {
            if (fgets(comm, sizeof comm, c))
                comm[strcspn(comm, "\n")] = 0;
            fclose(c);
        }
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        c = fopen(path, "r");
        if (c) {
            if (!fgets(stat, sizeof stat, c))
                stat[0] = 0;
            fclose(c);
        }
        snprintf(path, sizeof path, "/proc/self/task/%s/wchan", e->d_name);
        c = fopen(path, "r");
        if (c) {
            if (!fgets(wchan, sizeof wchan, c))
                strcpy(wchan, "?");
            fclose(c);
        }
        /* the state is the field after the name's closing parenthesis */
        const char *p = strrchr(stat, ')');
        char state = p && p[1] && p[2] ? p[2] : '?';
        fprintf(f, "  thread %s %-16s state %c wchan %s\n", e->d_name, comm, state, wchan);
    }
    closedir(d);
}

static void dump_stall(struct ss *ss, const struct ss_io *m, pt_nanos still)
{
    if (atomic_exchange(&ios.dumped, 1))
        return;
    pt_sched_stats st;
    pt_sched_read_stats(ss->s, &st);
    fprintf(stderr,
            "ptstress: stall on pair %ld: %llu bytes written, %llu read, no read for %.0f ms\n"
            "  scheduler: gs_created %llu, netpoll waits %llu breaks %llu, parks %llu, "
            "spinning_max %llu, sysmon wakeps %llu, timers run by owner %llu / stolen %llu / "
            "sysmon %llu\n",
            (long)(m - ios.io), (unsigned long long)atomic_load(&m->written),
            (unsigned long long)atomic_load(&m->read), (double)still / 1e6,
            (unsigned long long)st.gs_created, (unsigned long long)st.netpoll_waits,
            (unsigned long long)st.netpoll_breaks, (unsigned long long)st.parks,
            (unsigned long long)st.spinning_max, (unsigned long long)st.sysmon_wakeps,
            (unsigned long long)st.timers_run_owner, (unsigned long long)st.timers_run_stolen,
            (unsigned long long)st.timers_run_sysmon);
    dump_threads(stderr);
}

void ss_io_scan(struct ss *ss, pt_nanos now)
{
    pt_nanos limit = ss->r->o->bound > STALL_NS ? ss->r->o->bound : STALL_NS;
    for (int i = 0; i < ios.n; i++) {
        struct ss_io *m = &ios.io[i];
        unsigned long long rd = atomic_load(&m->read), wr = atomic_load(&m->written);
        if (rd >= wr || rd != m->seen_read) {
            m->seen_read = rd;
            m->seen_at = now;
        } else if (stress_overdue(ss->r, m->seen_at, now, limit)) {
            stress_violation(ss->r, V_STALL, i, 0, "bytes written to be read within the bound",
                             "%llu bytes unread, no read for %.0f ms", wr - rd,
                             (double)(now - m->seen_at) / 1e6);
            dump_stall(ss, m, now - m->seen_at);
            m->seen_at = now; /* once per second of stall, not every scan */
        }
    }
}

void ss_io_stop(void)
{
    if (ios.outside_started)
        pthread_join(ios.outside, NULL);
    ios.outside_started = false;
    /* a reader blocked with no deadline needs a byte to see the stop */
    for (int i = 0; i < ios.n; i++) {
        ssize_t w = write(ios.io[i].sv[1], "e", 1);
        (void)w; /* a full buffer: the reader is awake anyway */
    }
    /* and an accept with none, a connection (the backlog has room: it
     * holds BACKLOG at most, and the listen call allowed twice that) */
    if (ios.ss && ios.lfd >= 0) {
        int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c >= 0 && connect(c, (struct sockaddr *)&ios.laddr, ios.laddr_len) == 0)
            atomic_fetch_add(&ios.connected, 1);
        if (c >= 0)
            close(c);
    }
}

void ss_io_free(void)
{
    struct ss *ss = ios.ss;
    if (ss && ios.fill[0] >= 0) {
        /* every byte a write said went out is there to read, and no more */
        fill_drain();
        unsigned long long sent = atomic_load(&ios.fill_sent), got = atomic_load(&ios.fill_read);
        if (sent != got)
            stress_violation(ss->r, V_COUNT, ios.n, 0,
                             "the bytes the writes said went out (pt_fd_writev's count) read",
                             "%llu said written, %llu read", sent, got);
        (void)pt_fd_close(ios.fill[0]);
        (void)pt_fd_close(ios.fill[1]);
    }
    if (ss && ios.lfd >= 0) {
        /* every connection made accepted, or still queued */
        unsigned long long queued = 0;
        int c;
        while ((c = accept4(ios.lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
            queued++;
            close(c);
        }
        unsigned long long made = atomic_load(&ios.connected), acc = atomic_load(&ios.accepted);
        if (made != acc + queued)
            stress_violation(ss->r, V_COUNT, ios.n + 1, 0,
                             "every connection made accepted once (or still queued at the end)",
                             "%llu made, %llu accepted, %llu queued", made, acc, queued);
        (void)pt_fd_close(ios.lfd);
    }
    for (int i = 0; i < ios.n; i++) {
        (void)pt_fd_close(ios.io[i].sv[0]);
        (void)pt_fd_close(ios.io[i].sv[1]);
    }
    free(ios.io);
    memset(&ios, 0, sizeof ios);
}
