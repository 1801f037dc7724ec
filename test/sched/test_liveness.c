/* No lost wake-ups between the Ms going idle, the netpoller's claim and
 * the monitor: whenever work exists (a ready descriptor, a due timer),
 * some thread takes it, even when every thread has gone to sleep.
 *
 * The forced cases take the netpoller's claim from a G that then ends, as
 * the monitor's non-blocking poll holds it for a moment, let every M go
 * idle, wait until the monitor sleeps too, drop the claim the way the
 * monitor does, and only then make the work appear: a descriptor
 * becomes readable, or a G's deadline falls due. Nobody polled again
 * before the fix. The stress case races the monitor's own call against
 * Gs blocked on descriptors and deadlines, with CPU hogs of its own, and
 * checks that every byte written is read within a bound on waiting. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sched/internal.h"
#include "util.h"

/* A stall is for ever; this only bounds how long the test waits to call
 * it one. */
#define STALL_BOUND (10 * SEC)

static void nonblocking_pair(int sv[2])
{
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
}

/* Waits up to STALL_BOUND for cond; false if it never held. */
#define WAITED_FOR(cond)                                                                           \
    ({                                                                                             \
        pt_nanos d_ = pt_nanotime() + STALL_BOUND;                                                 \
        while (!(cond) && pt_nanotime() < d_)                                                      \
            nap_ms();                                                                              \
        (bool)(cond);                                                                              \
    })

/* What a stalled scheduler looks like, for the failure message. */
static void report_stall(pt_sched *s, const char *what)
{
    fprintf(stderr,
            "stall: %s: npidle %d of %d, nmspinning %d, polling %u, poll_wanted %u, "
            "park_word %u, wakeup_pending %u, sysmon_sleeping %u, globq %u, parks %llu, "
            "netpoll waits %llu\n",
            what, (int)atomic_load(&s->idle.npidle), (int)atomic_load(&s->nprocs),
            (int)atomic_load(&s->idle.nmspinning), atomic_load(&s->idle.polling),
            atomic_load(&s->idle.poll_wanted), atomic_load(&s->idle.park_word),
            atomic_load(&s->idle.wakeup_pending), atomic_load(&s->sysmon.sleeping),
            atomic_load(&s->globq.len), (unsigned long long)atomic_load(&s->st.parks),
            (unsigned long long)atomic_load(&s->st.netpoll_waits));
}

/* A G takes the claim, as a non-blocking poll does, and ends holding it:
 * while it runs, its own M cannot be the poller. Another P's M may be,
 * blocked in the netpoller. Breaking its sleep is not enough: woken, it
 * drops the claim and, finding nothing to run, takes it back, and with one
 * core free (the tests run two at a time) it does so before this G runs
 * again, every time. So a helper G is made for it to run: it spins until
 * the claim is taken, and the poller, busy with it, stays away. */
struct claim {
    pt_sched *s;
    atomic_int taken;
};

static void claim_helper(void *arg)
{
    struct claim *c = arg;
    pt_nanos give_up = pt_nanotime() + BOUND;
    while (!atomic_load(&c->taken))
        CHECK(pt_nanotime() < give_up);
}

static void claimer(void *arg)
{
    struct claim *c = arg;
    pt_sched *s = c->s;
    pt_nanos give_up = pt_nanotime() + BOUND;
    bool helped = pt_sched_procs(s) == 1; /* no other M to be the poller */
    while (!pt__poller_try(s)) {
        CHECK(pt_nanotime() < give_up);
        if (!helped) {
            CHECK_EQ(pt_go(s, claim_helper, c), 0);
            helped = true;
        }
        pt_netpoll_break(s->np);
    }
    atomic_store(&c->taken, 1);
}

static void hold_claim(pt_sched *s)
{
    struct claim c = {.s = s};
    CHECK_EQ(pt_go(s, claimer, &c), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
}

/* ---- forced: the claim dropped after every thread went to sleep ----------- */

struct forced {
    pt_sched *s;
    int fd;            /* the reader's end */
    pt_nanos deadline; /* of the read: 0 none */
    atomic_int parked; /* the G is about to park */
    atomic_int done;
    ssize_t rc;
};

static void forced_reader(void *arg)
{
    struct forced *f = arg;
    char b;
    atomic_store(&f->parked, 1);
    f->rc = pt_fd_read(f->fd, &b, 1, f->deadline);
    atomic_store(&f->done, 1);
}

/* Every P idle, its M parked or about to, and the monitor asleep: then
 * only a poller, or nobody, will see what comes next. */
static bool all_asleep(pt_sched *s, struct forced *f)
{
    return atomic_load(&f->parked) && atomic_load(&s->idle.npidle) == atomic_load(&s->nprocs) &&
           atomic_load(&s->sysmon.sleeping);
}

/* One G blocked reading; the claim is held while it parks and every M
 * goes idle, dropped once the monitor sleeps; then the descriptor becomes
 * readable (timeout 0), or the read's deadline falls due (timeout > 0,
 * per-P mode: the timer is on an idle P's heap). True if the case ran as
 * forced (the deadline did not pass before the claim was dropped). */
static bool forced_case(int procs, enum pt_timer_mode mode, pt_nanos timeout)
{
    pt_sched *s = make_sched(procs, mode);
    int sv[2];
    nonblocking_pair(sv);
    struct forced f = {.s = s, .fd = sv[0]};
    hold_claim(s);
    f.deadline = timeout ? pt_nanotime() + timeout : 0;
    CHECK_EQ(pt_go(s, forced_reader, &f), 0);
    if (!WAITED_FOR(all_asleep(s, &f))) {
        report_stall(s, "setup");
        CHECK(!"the Ms and the monitor never all went to sleep");
    }
    pt__poller_release(s); /* as the monitor's poll ends */
    bool forced = !timeout || pt_nanotime() < f.deadline;
    if (!timeout)
        CHECK_EQ(write(sv[1], "x", 1), 1);
    if (!WAITED_FOR(atomic_load(&f.done))) {
        report_stall(s, timeout ? "a deadline due" : "a descriptor ready");
        CHECK(!"the G never woke: nobody polls");
    }
    CHECK_EQ(f.rc, timeout ? -ETIMEDOUT : 1);
    finish_sched(s);
    CHECK_EQ(pt_fd_close(sv[0]), 0);
    close(sv[1]);
    return forced;
}

static void forced_ready(enum pt_timer_mode mode)
{
    for (int procs = 1; procs <= 2; procs++)
        for (int i = 0; i < 3; i++)
            forced_case(procs, mode, 0);
}

void test_a_descriptor_ready_after_a_poll_held_the_claim_wakes_its_g(int mode)
{
    forced_ready((enum pt_timer_mode)mode);
}

/* The per-P modes only: in the TimerThread mode the timer thread fires
 * deadlines whoever polls. The deadline must fall after the claim is
 * dropped for the case to force anything: a slow setup (a sanitizer)
 * tries again with a longer one. */
void test_a_deadline_due_after_a_poll_held_the_claim_fires(void)
{
    for (int m = 0; m < PT_TEST_NMODES; m++) {
        if (pt_test_modes[m] == PT_TIMERS_TIMERTHREAD)
            continue;
        for (int procs = 1; procs <= 2; procs++) {
            int forced = 0;
            for (pt_nanos t = 100 * MS; forced < 2; t *= 2) {
                CHECK(t <= 2 * SEC);
                forced += forced_case(procs, pt_test_modes[m], t);
            }
        }
    }
}

/* ---- stress: the monitor's poll racing Ms that go idle --------------------- */

enum { NPAIRS = 32 };

struct stress {
    pt_sched *s;
    int sv[NPAIRS][2];
    atomic_long written, read;
    atomic_int stop;       /* the readers' end: a byte of value 'q' each */
    atomic_int poll_burst; /* the poller thread's turn */
    atomic_long bursts;    /* bursts the poller thread finished */
    atomic_int hogs_stop;
    uint64_t seed;
};

struct reader_arg {
    struct stress *st;
    int i;
};

/* Reads its descriptor with a short deadline or none, in turn, until
 * the writer's 'q'. */
static void stress_reader(void *arg)
{
    struct reader_arg *a = arg;
    struct stress *st = a->st;
    uint64_t x = (uint64_t)a->i * 0x9e3779b97f4a7c15ull + 1;
    for (;;) {
        char b;
        pt_nanos d =
            pt__xorshift64(&x) % 2 ? pt_nanotime() + (pt_nanos)(pt__xorshift64(&x) % (2 * MS)) : 0;
        ssize_t r = pt_fd_read(st->sv[a->i][0], &b, 1, d);
        if (r == -ETIMEDOUT)
            continue;
        CHECK_EQ(r, 1);
        if (b == 'q')
            return;
        atomic_fetch_add(&st->read, 1);
    }
}

/* The monitor's own call, in bursts: each burst takes and drops the claim
 * as often as it can for a moment, while the M that just ran a reader
 * goes idle, then stops, so that a claim dropped while that M went to
 * sleep is followed by silence until the next byte. */
static void *stress_poller(void *arg)
{
    struct stress *st = arg;
    while (!atomic_load(&st->stop)) {
        if (!atomic_exchange(&st->poll_burst, 0)) {
            sched_yield();
            continue;
        }
        pt_nanos end = pt_nanotime() + 20 * US + (pt_nanos)(pt__xorshift64(&st->seed) % (200 * US));
        while (pt_nanotime() < end)
            pt__poll_ready_fds(st->s);
        atomic_fetch_add(&st->bursts, 1);
    }
    return NULL;
}

/* CPU contention of the test's own: the Ms and the monitor wait for a
 * core, as a server's do on a loaded machine. */
static void *hog(void *arg)
{
    struct stress *st = arg;
    while (!atomic_load_explicit(&st->hogs_stop, memory_order_relaxed))
        ;
    return NULL;
}

static void stress_mode(int procs, enum pt_timer_mode mode, int bytes)
{
    struct stress st;
    memset(&st, 0, sizeof st);
    st.seed = 0x5eed + (uint64_t)procs * 7 + (uint64_t)mode;
    st.s = make_sched(procs, mode);
    struct reader_arg args[NPAIRS];
    for (int i = 0; i < NPAIRS; i++) {
        nonblocking_pair(st.sv[i]);
        args[i] = (struct reader_arg){&st, i};
        CHECK_EQ(pt_go(st.s, stress_reader, &args[i]), 0);
    }
    pthread_t poller, hogs[2];
    CHECK_EQ(pthread_create(&poller, NULL, stress_poller, &st), 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&hogs[i], NULL, hog, &st), 0);
    uint64_t x = st.seed;
    for (int k = 0; k < bytes; k++) {
        /* a byte; once it is read, a burst of the monitor's polls while
         * the reader's M goes idle; the next byte after the burst */
        int i = (int)(pt__xorshift64(&x) % NPAIRS);
        CHECK_EQ(write(st.sv[i][1], "x", 1), 1);
        long want = atomic_fetch_add(&st.written, 1) + 1;
        if (!WAITED_FOR(atomic_load(&st.read) >= want)) {
            report_stall(st.s, "stress");
            CHECK(!"a byte written was never read");
        }
        long bursts = atomic_load(&st.bursts);
        atomic_store(&st.poll_burst, 1);
        WAIT_FOR(atomic_load(&st.bursts) > bursts);
    }
    atomic_store(&st.hogs_stop, 1);
    atomic_store(&st.stop, 1);
    CHECK_EQ(pthread_join(poller, NULL), 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_join(hogs[i], NULL), 0);
    for (int i = 0; i < NPAIRS; i++)
        CHECK_EQ(write(st.sv[i][1], "q", 1), 1);
    finish_sched(st.s);
    CHECK_EQ(atomic_load(&st.read), bytes);
    for (int i = 0; i < NPAIRS; i++) {
        CHECK_EQ(pt_fd_close(st.sv[i][0]), 0);
        close(st.sv[i][1]);
    }
}

void test_monitor_polls_racing_idle_ms_lose_no_descriptor(void)
{
    for (int procs = 1; procs <= 2; procs++)
        for (int m = 0; m < PT_TEST_NMODES; m++)
            stress_mode(procs, pt_test_modes[m], SCALE(600));
}
