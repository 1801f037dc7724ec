/* The sched scenario's I/O: Gs that read socketpairs with deadlines (a
 * short one, or none) while Gs and a plain thread write to them, beside
 * the timers and sleepers of sc_sched.c. A read that times out is never
 * early. Beside them, BURST_PAIRS pairs whose readers wait with no
 * deadline (nothing but their byte can wake them), to all of which the
 * plain thread writes at once now and then: more completions at once
 * than a ring's CQ holds (sc_sched.c makes it 16 entries), while the
 * other Gs keep the Ps busy. The watchdog: bytes written and not read,
 * on a pair whose reader has not moved for a second (or the bound, if
 * longer), are a stall, the scheduler having lost a wake-up; it is
 * reported with the scheduler's counters and every thread's state, once
 * per run. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
};

struct ss_ios {
    struct ss_io *io;
    int n, nplain; /* pairs; the first nplain are not burst pairs */
    pthread_t outside;
    bool outside_started;
    atomic_int dumped;
};

static struct ss_ios ios;

static void io_reader(void *arg)
{
    struct ss_io *m = arg;
    struct ss *ss = m->ss;
    char buf[256];
    while (!atomic_load_explicit(&ss->stop, memory_order_relaxed)) {
        uint64_t x = pt__xorshift64(&m->rng);
        pt_nanos d = m->burst || x % 3 == 0 ? 0 : pt_nanotime() + (pt_nanos)(x % (3 * SS_MS));
        ssize_t r = pt_fd_read(m->sv[0], buf, sizeof buf, d);
        atomic_fetch_add_explicit(&ss->r->ops, 1, memory_order_relaxed);
        if (r == -ETIMEDOUT) {
            pt_nanos t = pt_nanotime();
            if (t < d)
                stress_violation(ss->r, V_EARLY, (long)(m - ios.io), 0,
                                 "a read's timeout at or after its deadline",
                                 "timed out %.3f ms early", (double)(d - t) / 1e6);
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

/* A plain thread writing to the odd pairs: readiness from outside the
 * scheduler, as a network's is. */
static void *io_outside(void *arg)
{
    struct ss *ss = arg;
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    while (!atomic_load_explicit(&ss->stop, memory_order_relaxed)) {
        uint64_t x = pt__xorshift64(&rng);
        stress_sleep((pt_nanos)(x % (3 * SS_MS)));
        if ((x >> 8) % BURST_EVERY == 0) {
            for (int i = ios.nplain; i < ios.n; i++) {
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

bool ss_io_start(struct ss *ss, int nplain, bool (*go)(struct ss *, void (*)(void *), void *))
{
    memset(&ios, 0, sizeof ios);
    int n = nplain + BURST_PAIRS;
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
        m->burst = i >= nplain;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, m->sv) != 0) {
            stress_violation(ss->r, V_ERROR, i, 0, "a socketpair", "%s", strerror(errno));
            m->sv[0] = m->sv[1] = -1;
            ios.n = i;
            ios.nplain = i < nplain ? i : nplain;
            return false;
        }
    }
    for (int i = 0; i < n; i++)
        if (!go(ss, io_reader, &ios.io[i]) ||
            (i % 2 == 0 && i < nplain && !go(ss, io_writer, &ios.io[i])))
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
}

void ss_io_free(void)
{
    for (int i = 0; i < ios.n; i++) {
        (void)pt_fd_close(ios.io[i].sv[0]);
        (void)pt_fd_close(ios.io[i].sv[1]);
    }
    free(ios.io);
    memset(&ios, 0, sizeof ios);
}
