/* Timeout code tested on virtual time (sched.h's "Virtual time"): a
 * client that retries a service with exponential backoff and jitter,
 * capped at five minutes, and a server that reaps connections idle for
 * thirty seconds. Together they span about an hour of the scheduler's
 * clock; the run takes milliseconds, and every time each G sees is the
 * one the code promised, to the nanosecond, on every run and in every
 * timer mode. It exits non-zero when one is not. */
#include <errno.h>
#include <ptimer/sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SEC ((pt_nanos)1000000000)
#define FAILURES 12         /* the service ignores this many requests */
#define TIMEOUT (10 * SEC)  /* a request's deadline */
#define BACKOFF_BASE SEC
#define BACKOFF_CAP (300 * SEC)
#define CONNS 8
#define IDLE (30 * SEC)

static int failed;
#define EXPECT(cond)                                                                           \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "vtime: %s:%d: %s\n", __FILE__, __LINE__, #cond);                  \
            failed = 1;                                                                        \
        }                                                                                      \
    } while (0)

static double secs(pt_nanos t)
{
    return (double)(t - PT_VIRTUAL_EPOCH) / 1e9;
}

/* A seeded generator: the jitter is random, and the same on every run. */
static uint64_t next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Attempt k's pause: base * 2^k capped, plus up to half of it again. */
static pt_nanos backoff(int k, uint64_t *rng)
{
    pt_nanos d = BACKOFF_BASE;
    for (int i = 0; i < k && d < BACKOFF_CAP; i++)
        d *= 2;
    if (d > BACKOFF_CAP)
        d = BACKOFF_CAP;
    return d + (pt_nanos)(next_rand(rng) % (uint64_t)(d / 2));
}

/* ---- a flaky service and the client that retries it --------------------- */

struct service {
    pt_chan *requests; /* of pt_chan *: where to answer */
    int seen;
};

static void service(void *arg)
{
    struct service *sv = arg;
    pt_chan *reply;
    while (pt_chan_recv(sv->requests, &reply) == 1) {
        if (sv->seen++ < FAILURES)
            continue; /* dropped: the client's deadline passes */
        int ok = 1;
        pt_chan_send(reply, &ok);
    }
}

struct client {
    pt_chan *requests;
    pt_nanos done_at, expected;
    int attempts;
};

static void client(void *arg)
{
    struct client *c = arg;
    uint64_t rng = 42;
    pt_chan *reply;
    pt_chan_make(&reply, sizeof(int), 1);
    pt_nanos t = pt_time_now(); /* when the code says each step happens */
    for (int k = 0;; k++) {
        c->attempts++;
        pt_chan_send(c->requests, &reply);
        int ok;
        int r = pt_chan_recv_until(reply, &ok, pt_time_now() + TIMEOUT);
        if (r == 1)
            break;
        EXPECT(r == -ETIMEDOUT);
        t += TIMEOUT;
        EXPECT(pt_time_now() == t); /* the deadline, not a tick after */
        pt_nanos d = backoff(k, &rng);
        printf("%9.3f s  attempt %2d timed out; backing off %.3f s\n", secs(pt_time_now()),
               k + 1, (double)d / 1e9);
        pt_sleep(d);
        t += d;
        EXPECT(pt_time_now() == t);
    }
    c->done_at = pt_time_now();
    c->expected = t;
    printf("%9.3f s  attempt %2d answered\n", secs(c->done_at), c->attempts);
    pt_chan_free(reply);
}

/* ---- a server that reaps idle connections ---------------------------------- */

struct conn {
    int id;
    pt_chan *in; /* what the peer sends: the time it sent it */
    pt_nanos last, reaped_at;
};

/* The peer: a message after each of a few pauses shorter than the idle
 * limit, then silence. */
static void peer(void *arg)
{
    struct conn *c = arg;
    for (int k = 0; k < 3 + c->id; k++) {
        pt_sleep((pt_nanos)(5 + 2 * c->id + k) * SEC); /* under IDLE */
        pt_nanos now = pt_time_now();
        pt_chan_send(c->in, &now);
    }
}

/* The server's side of a connection: each message pushes the idle timer
 * back (Go's SetReadDeadline per request, as a Timer reset). */
static void conn_reaper(void *arg)
{
    struct conn *c = arg;
    pt_time_timer *idle;
    pt_time_timer_new(&idle, IDLE);
    c->last = pt_time_now();
    for (;;) {
        pt_nanos sent, fired;
        pt_select_case cs[2] = {{.chan = c->in, .dir = PT_RECV, .elem = &sent},
                                {.chan = pt_time_timer_chan(idle), .dir = PT_RECV, .elem = &fired}};
        int i = pt_select(cs, 2, 0, true);
        if (i == 0) {
            EXPECT(sent == pt_time_now()); /* no time passes in a hand-over */
            c->last = sent;
            pt_time_timer_reset(idle, IDLE);
            continue;
        }
        EXPECT(i == 1 && fired == c->last + IDLE);
        c->reaped_at = pt_time_now();
        break;
    }
    pt_time_timer_free(idle);
}

static void reap_all(struct conn *cs)
{
    for (int i = 0; i < CONNS; i++) {
        cs[i].id = i;
        pt_chan_make(&cs[i].in, sizeof(pt_nanos), 0);
        pt_go(NULL, peer, &cs[i]);
        pt_go(NULL, conn_reaper, &cs[i]);
    }
}

/* ---- the test ------------------------------------------------------------------ */

struct run {
    struct client cl;
    struct service sv;
    struct conn cs[CONNS];
};

static void test_main(void *arg)
{
    struct run *r = arg;
    pt_chan_make(&r->sv.requests, sizeof(pt_chan *), 0);
    r->cl.requests = r->sv.requests;
    pt_go(NULL, service, &r->sv);
    reap_all(r->cs);
    client(&r->cl);
    pt_chan_close(r->sv.requests);
    /* advance, then look: every connection is reaped within the hour */
    pt_sleep(3600 * SEC - (pt_time_now() - PT_VIRTUAL_EPOCH));
    pt_sched_settle();
    for (int i = 0; i < CONNS; i++) {
        EXPECT(r->cs[i].reaped_at == r->cs[i].last + IDLE);
        printf("%9.3f s  connection %d reaped (last heard at %.3f s)\n",
               secs(r->cs[i].reaped_at), i, secs(r->cs[i].last));
    }
}

static void on_deadlock(const char *report, void *arg)
{
    (void)arg;
    fputs(report, stderr);
}

int main(void)
{
    const enum pt_timer_mode modes[] = {PT_TIMERS_PER_P, PT_TIMERS_LHEAP, PT_TIMERS_TIMERTHREAD};
    for (int m = 0; m < 3; m++) {
        static struct run r;
        r = (struct run){0};
        pt_sched_options o = {.procs = 2,
                              .timers = modes[m],
                              .virtual_time = true,
                              .on_deadlock = on_deadlock};
        pt_nanos t0 = pt_nanotime();
        int err = pt_sched_run(&o, test_main, &r);
        pt_nanos wall = pt_nanotime() - t0;
        if (err != 0) {
            fprintf(stderr, "vtime: pt_sched_run: %d\n", err);
            return 1;
        }
        EXPECT(r.cl.attempts == FAILURES + 1);
        EXPECT(r.cl.done_at == r.cl.expected);
        printf("mode %d: %.0f s of virtual time in %.1f ms of real time\n\n", m,
               (double)3600, (double)wall / 1e6);
        pt_chan_free(r.sv.requests);
        for (int i = 0; i < CONNS; i++)
            pt_chan_free(r.cs[i].in);
    }
    if (!failed)
        printf("vtime: every G saw the times the code promised\n");
    return failed;
}
