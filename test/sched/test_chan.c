/* Channels and select, with cases ported from Go's runtime/chan_test.go
 * and select tests: ping-pong order, buffered and unbuffered FIFO, close
 * semantics, non-blocking forms, deadlines, select fairness, select on a
 * closed channel, many producers and consumers losing and duplicating
 * nothing. */
#include <errno.h>
#include <string.h>

#include "util.h"

static pt_chan *make_chan(size_t elem, size_t cap)
{
    pt_chan *c = NULL;
    CHECK_EQ(pt_chan_make(&c, elem, cap), 0);
    return c;
}

/* ---- ping-pong ---------------------------------------------------------- */

struct pp {
    pt_chan *ping, *pong;
    int rounds;
};

static void ponger(void *arg)
{
    struct pp *p = arg;
    for (int i = 0; i < p->rounds; i++) {
        int v = -1;
        CHECK_EQ(pt_chan_recv(p->ping, &v), 1);
        CHECK_EQ(v, i);
        v++;
        CHECK_EQ(pt_chan_send(p->pong, &v), 0);
    }
}

static void pinger(void *arg)
{
    struct pp *p = arg;
    for (int i = 0; i < p->rounds; i++) {
        CHECK_EQ(pt_chan_send(p->ping, &i), 0);
        int v = -1;
        CHECK_EQ(pt_chan_recv(p->pong, &v), 1);
        CHECK_EQ(v, i + 1);
    }
}

void test_chan_ping_pong_keeps_order_buffered_and_not(void)
{
    for (size_t cap = 0; cap <= 2; cap++) {
        pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
        struct pp p = {make_chan(sizeof(int), cap), make_chan(sizeof(int), cap),
                       (int)SCALE(10000)};
        CHECK_EQ(pt_go(s, ponger, &p), 0);
        CHECK_EQ(pt_go(s, pinger, &p), 0);
        finish_sched(s);
        CHECK_EQ(pt_chan_free(p.ping), 0);
        CHECK_EQ(pt_chan_free(p.pong), 0);
    }
}

/* ---- Go's TestChan: FIFO, len, cap, non-blocking ------------------------ */

void test_chan_buffer_is_fifo_and_try_forms_never_block(void)
{
    pt_chan *c = make_chan(sizeof(long), 4);
    long v;
    CHECK_EQ(pt_chan_cap(c), 4);
    CHECK_EQ(pt_chan_try_recv(c, &v), -EAGAIN); /* empty */
    for (long i = 0; i < 4; i++)
        CHECK_EQ(pt_chan_try_send(c, &i), 0);
    CHECK_EQ(pt_chan_len(c), 4);
    long x = 99;
    CHECK_EQ(pt_chan_try_send(c, &x), -EAGAIN); /* full: nothing changes */
    CHECK_EQ(pt_chan_len(c), 4);
    for (long i = 0; i < 4; i++) {
        CHECK_EQ(pt_chan_try_recv(c, &v), 1);
        CHECK_EQ(v, i);
    }
    CHECK_EQ(pt_chan_len(c), 0);
    /* an unbuffered channel with nobody waiting never takes a try */
    pt_chan *u = make_chan(sizeof(long), 0);
    CHECK_EQ(pt_chan_try_send(u, &x), -EAGAIN);
    CHECK_EQ(pt_chan_try_recv(u, &v), -EAGAIN);
    CHECK_EQ(pt_chan_free(u), 0);
    CHECK_EQ(pt_chan_free(c), 0);
}

/* ---- close ---------------------------------------------------------------- */

static atomic_int close_seen, about_to_block;

static void blocked_receiver(void *arg)
{
    long v = 7;
    atomic_fetch_add(&about_to_block, 1);
    CHECK_EQ(pt_chan_recv(arg, &v), 0); /* closed and drained */
    CHECK_EQ(v, 0);                     /* zeroed */
    atomic_fetch_add(&close_seen, 1);
}

static void blocked_sender(void *arg)
{
    long v = 1;
    atomic_fetch_add(&about_to_block, 1);
    CHECK_EQ(pt_chan_send(arg, &v), -EPIPE);
    atomic_fetch_add(&close_seen, 1);
}

/* One P: once all ten have announced themselves, each has also parked
 * (a G runs until it parks; nothing preempts it in between). */
static void close_driver(void *arg)
{
    pt_chan **rw = arg;
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(pt_go(NULL, blocked_receiver, rw[0]), 0);
        CHECK_EQ(pt_go(NULL, blocked_sender, rw[1]), 0);
    }
    while (atomic_load(&about_to_block) < 10)
        pt_yield();
    CHECK_EQ(pt_chan_free(rw[0]), -EBUSY); /* Gs wait on it */
    CHECK_EQ(pt_chan_free(rw[1]), -EBUSY);
    CHECK_EQ(atomic_load(&close_seen), 0);
    CHECK_EQ(pt_chan_close(rw[0]), 0);
    CHECK_EQ(pt_chan_close(rw[1]), 0);
}

void test_close_drains_then_zero_and_wakes_every_waiter(void)
{
    /* receivers drain buffered values first (Go's close semantics) */
    pt_chan *c = make_chan(sizeof(long), 3);
    for (long i = 1; i <= 2; i++)
        CHECK_EQ(pt_chan_try_send(c, &i), 0);
    CHECK_EQ(pt_chan_close(c), 0);
    CHECK_EQ(pt_chan_close(c), -EPIPE);
    long x = 5, v;
    CHECK_EQ(pt_chan_try_send(c, &x), -EPIPE);
    CHECK_EQ(pt_chan_try_recv(c, &v), 1);
    CHECK_EQ(v, 1);
    CHECK_EQ(pt_chan_try_recv(c, &v), 1);
    CHECK_EQ(v, 2);
    v = 9;
    CHECK_EQ(pt_chan_try_recv(c, &v), 0);
    CHECK_EQ(v, 0);
    CHECK_EQ(pt_chan_free(c), 0);

    /* blocked Gs on both sides are woken by close */
    atomic_store(&close_seen, 0);
    atomic_store(&about_to_block, 0);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    pt_chan *rw[2] = {make_chan(sizeof(long), 0), make_chan(sizeof(long), 0)};
    CHECK_EQ(pt_go(s, close_driver, rw), 0);
    finish_sched(s);
    CHECK_EQ(atomic_load(&close_seen), 10);
    CHECK_EQ(pt_chan_free(rw[0]), 0);
    CHECK_EQ(pt_chan_free(rw[1]), 0);
}

/* ---- deadlines -------------------------------------------------------------- */

static void timed_waits(void *arg)
{
    (void)arg;
    pt_chan *c = make_chan(sizeof(int), 0);
    int v = 0;
    for (int i = 0; i < 20; i++) {
        pt_nanos d = pt_nanotime() + (i % 5) * 200 * US;
        CHECK_EQ(pt_chan_recv_until(c, &v, d), -ETIMEDOUT);
        CHECK(pt_nanotime() >= d); /* never early */
        d = pt_nanotime() + (i % 3) * 300 * US;
        CHECK_EQ(pt_chan_send_until(c, &v, d), -ETIMEDOUT);
        CHECK(pt_nanotime() >= d);
    }
    CHECK_EQ(pt_chan_recv_until(c, &v, pt_nanotime() - 1), -ETIMEDOUT); /* past: at once */
    pt_select_case k[1] = {{c, PT_RECV, &v, false}};
    pt_nanos d = pt_nanotime() + MS;
    CHECK_EQ(pt_select(k, 1, d, true), -ETIMEDOUT);
    CHECK(pt_nanotime() >= d);
    CHECK_EQ(pt_chan_free(c), 0); /* no waiter left behind */
}

void test_deadlines_time_out_never_early_every_mode(void)
{
    for (int mode = PT_TIMERS_PER_P; mode <= PT_TIMERS_LHEAP; mode++) {
        pt_sched *s = make_sched(2, (enum pt_timer_mode)mode);
        for (int i = 0; i < 4; i++)
            CHECK_EQ(pt_go(s, timed_waits, NULL), 0);
        finish_sched(s);
    }
}

/* A value that arrives before the deadline is received, not a timeout. */
static void late_sender(void *arg)
{
    pt_sleep(2 * MS);
    int v = 42;
    CHECK_EQ(pt_chan_send(arg, &v), 0);
}

static void patient_receiver(void *arg)
{
    int v = 0;
    CHECK_EQ(pt_chan_recv_until(arg, &v, pt_nanotime() + 10 * SEC), 1);
    CHECK_EQ(v, 42);
}

void test_value_before_the_deadline_is_received(void)
{
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    pt_chan *c = make_chan(sizeof(int), 0);
    CHECK_EQ(pt_go(s, patient_receiver, c), 0);
    CHECK_EQ(pt_go(s, late_sender, c), 0);
    finish_sched(s);
    CHECK_EQ(pt_chan_free(c), 0);
}

/* ---- select ------------------------------------------------------------------ */

/* Go's TestSelectFairness: every ready case is chosen about as often. */
void test_select_chooses_uniformly_among_ready_cases(void)
{
    enum { N = 4, TRIALS = 20000 };
    pt_chan *c[N];
    pt_select_case k[N];
    int got[N];
    for (int i = 0; i < N; i++) {
        c[i] = make_chan(sizeof(int), 1);
        got[i] = 0;
    }
    for (int t = 0; t < TRIALS; t++) {
        for (int i = 0; i < N; i++) {
            int one = i;
            if (pt_chan_len(c[i]) == 0)
                CHECK_EQ(pt_chan_try_send(c[i], &one), 0);
            k[i] = (pt_select_case){c[i], PT_RECV, NULL, false};
        }
        int r = pt_select(k, N, 0, false);
        CHECK(r >= 0 && r < N);
        CHECK(k[r].ok);
        got[r]++;
    }
    /* each near TRIALS / N = 5000 (sd 61): 4000 is more than 16 sd off */
    for (int i = 0; i < N; i++) {
        CHECK(got[i] > TRIALS / N - 1000);
        CHECK(got[i] < TRIALS / N + 1000);
        CHECK_EQ(pt_chan_free(c[i]), 0);
    }
}

void test_select_non_blocking_closed_and_null_cases(void)
{
    pt_chan *a = make_chan(sizeof(int), 0), *b = make_chan(sizeof(int), 1);
    int v = 3;
    pt_select_case k[3] = {{NULL, PT_RECV, &v, false}, {a, PT_RECV, &v, false},
                           {b, PT_RECV, &v, false}};
    CHECK_EQ(pt_select(k, 3, 0, false), -EAGAIN); /* nothing ready: default */
    CHECK_EQ(pt_select(k, 3, 0, true), -EPERM);   /* blocking outside a G */
    CHECK_EQ(pt_chan_try_send(b, &v), 0);
    CHECK_EQ(pt_select(k, 3, 0, false), 2);
    CHECK(k[2].ok);
    CHECK_EQ(pt_chan_close(a), 0);
    v = 8;
    CHECK_EQ(pt_select(k, 3, 0, false), 1); /* closed is ready: zero, !ok */
    CHECK(!k[1].ok);
    CHECK_EQ(v, 0);
    pt_select_case s1[1] = {{a, PT_SEND, &v, false}};
    CHECK_EQ(pt_select(s1, 1, 0, false), -EPIPE); /* send on closed */
    pt_select_case none[1] = {{NULL, PT_SEND, &v, false}};
    CHECK_EQ(pt_select(none, 1, 0, false), -EAGAIN);
    CHECK_EQ(pt_chan_free(a), 0);
    CHECK_EQ(pt_chan_free(b), 0);
}

/* ---- many producers and consumers, plain and through select ------------------ */

struct mpmc {
    pt_chan *c[2];
    long per_sender;
    atomic_llong sum, count;
    pt_wg senders;
};

static void mp_sender(void *arg)
{
    struct mpmc *m = arg;
    for (long i = 1; i <= m->per_sender; i++) {
        if (i % 3 == 0) {
            pt_select_case k[2] = {{m->c[0], PT_SEND, &i, false}, {m->c[1], PT_SEND, &i, false}};
            int r = pt_select(k, 2, 0, true);
            CHECK(r == 0 || r == 1);
        } else {
            CHECK_EQ(pt_chan_send(m->c[i % 2], &i), 0);
        }
    }
    CHECK_EQ(pt_wg_done(&m->senders), 0);
}

static void mp_receiver(void *arg)
{
    struct mpmc *m = arg;
    for (;;) {
        long v = 0;
        pt_select_case k[2] = {{m->c[0], PT_RECV, &v, false}, {m->c[1], PT_RECV, &v, false}};
        int r = pt_select(k, 2, 0, true);
        CHECK(r == 0 || r == 1);
        if (!k[r].ok) {
            k[r].chan = NULL; /* closed: Go's idiom, a nil channel is never ready */
            long w = 0;
            if (pt_chan_recv(m->c[1 - r], &w) == 0)
                return;
            atomic_fetch_add(&m->sum, w);
            atomic_fetch_add(&m->count, 1);
            continue;
        }
        atomic_fetch_add(&m->sum, v);
        atomic_fetch_add(&m->count, 1);
    }
}

static void closer(void *arg)
{
    struct mpmc *m = arg;
    CHECK_EQ(pt_wg_wait(&m->senders), 0);
    CHECK_EQ(pt_chan_close(m->c[0]), 0);
    CHECK_EQ(pt_chan_close(m->c[1]), 0);
}

void test_many_senders_and_receivers_lose_and_duplicate_nothing(void)
{
    for (size_t cap = 0; cap <= 16; cap += 16) {
        enum { SENDERS = 8, RECEIVERS = 8 };
        struct mpmc m;
        m.c[0] = make_chan(sizeof(long), cap);
        m.c[1] = make_chan(sizeof(long), cap);
        m.per_sender = SCALE(5000);
        atomic_init(&m.sum, 0);
        atomic_init(&m.count, 0);
        CHECK_EQ(pt_wg_init(&m.senders), 0);
        CHECK_EQ(pt_wg_add(&m.senders, SENDERS), 0);
        pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
        for (int i = 0; i < RECEIVERS; i++)
            CHECK_EQ(pt_go(s, mp_receiver, &m), 0);
        for (int i = 0; i < SENDERS; i++)
            CHECK_EQ(pt_go(s, mp_sender, &m), 0);
        CHECK_EQ(pt_go(s, closer, &m), 0);
        finish_sched(s);
        CHECK_EQ(atomic_load(&m.count), SENDERS * m.per_sender);
        CHECK_EQ(atomic_load(&m.sum), SENDERS * m.per_sender * (m.per_sender + 1) / 2);
        CHECK_EQ(pt_chan_free(m.c[0]), 0);
        CHECK_EQ(pt_chan_free(m.c[1]), 0);
    }
}

/* ---- element size 0 and bad input ------------------------------------------------ */

void test_chan_bad_input_and_empty_elements(void)
{
    pt_chan *c = NULL;
    CHECK_EQ(pt_chan_make(NULL, 8, 1), -EINVAL);
    CHECK_EQ(pt_chan_make(&c, SIZE_MAX / 2, 4), -EINVAL); /* overflow */
    CHECK(c == NULL);
    int v = 0;
    CHECK_EQ(pt_chan_send(NULL, &v), -EINVAL);
    CHECK_EQ(pt_chan_recv(NULL, &v), -EINVAL);
    CHECK_EQ(pt_chan_try_send(NULL, &v), -EINVAL);
    CHECK_EQ(pt_chan_try_recv(NULL, &v), -EINVAL);
    CHECK_EQ(pt_chan_send_until(NULL, &v, 1), -EINVAL);
    CHECK_EQ(pt_chan_recv_until(NULL, &v, 1), -EINVAL);
    CHECK_EQ(pt_chan_close(NULL), -EINVAL);
    CHECK_EQ(pt_chan_free(NULL), -EINVAL);
    CHECK_EQ(pt_chan_len(NULL), 0);
    CHECK_EQ(pt_chan_cap(NULL), 0);
    CHECK_EQ(pt_select(NULL, 1, 0, false), -EINVAL);
    CHECK_EQ(pt_select(NULL, -1, 0, false), -EINVAL);
    c = make_chan(sizeof(int), 1);
    CHECK_EQ(pt_chan_send(c, &v), -EPERM); /* blocking outside a G */
    CHECK_EQ(pt_chan_recv(c, &v), -EPERM);
    CHECK_EQ(pt_chan_try_send(c, NULL), -EINVAL); /* nothing to send */
    pt_select_case bad[1] = {{c, 7, &v, false}};
    CHECK_EQ(pt_select(bad, 1, 0, false), -EINVAL);
    CHECK_EQ(pt_chan_len(c), 0);
    CHECK_EQ(pt_chan_free(c), 0);
    /* struct{}-like channels: signals without data */
    pt_chan *z = make_chan(0, 2);
    CHECK_EQ(pt_chan_try_send(z, NULL), 0);
    CHECK_EQ(pt_chan_try_send(z, NULL), 0);
    CHECK_EQ(pt_chan_try_send(z, NULL), -EAGAIN);
    CHECK_EQ(pt_chan_try_recv(z, NULL), 1);
    CHECK_EQ(pt_chan_len(z), 1);
    CHECK_EQ(pt_chan_free(z), 0);
}
