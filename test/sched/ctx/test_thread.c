/* Fibers and OS threads: a thread's own fiber, and a fiber that hops from
 * thread to thread as a G moves between Ms. */
#include <pthread.h>

#include "util.h"

static void check_bounds_hold_here(void)
{
    struct pt__fiber f;
    pt__fiber_init_thread(&f);
    /* The frame, not a local's address: with ASan's use-after-return
     * detection locals live on a fake stack in the heap. */
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    CHECK(f.stack_lo != NULL);
    CHECK(here > (uintptr_t)f.stack_lo);
    CHECK(here < (uintptr_t)f.stack_lo + f.stack_size);
}

static void *bounds_thread(void *arg)
{
    (void)arg;
    check_bounds_hold_here();
    return NULL;
}

void test_thread_fiber_bounds_hold_the_running_stack(void)
{
    check_bounds_hold_here(); /* the main thread's, sized from RLIMIT_STACK */
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, bounds_thread, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
}

/* ---- migration ------------------------------------------------------------ */

/* Two worker threads, each with its own fiber (an M's g0), pass one fiber
 * back and forth through a mutex-protected slot: it runs one hop on a
 * thread, switches to that thread's g0, which hands it to the other. */
#define HOPS 1000

struct hop {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct pt__fiber *slot[2]; /* the fiber, waiting for worker i */
    int finished;              /* the fiber's entry is done */
    struct tfiber fib;
    int on_worker[HOPS];
    pthread_t on_thread[HOPS];
    uint64_t heap_sum; /* written on every hop, from both threads */
};

/* The thread the fiber runs on, read the one way fiber.h allows after a
 * switch that may have moved it. */
static _Thread_local struct pt__fiber *tls_g0;
static _Thread_local int tls_worker;

static PT__TLS_READER struct pt__fiber *current_g0(void)
{
    return tls_g0;
}

static PT__TLS_READER int current_worker(void)
{
    return tls_worker;
}

/* pthread_self() too: glibc declares it __attribute__((const)), so clang
 * 14 computes it once for the whole loop below. (errno is the same: its
 * __errno_location is const.) */
static PT__TLS_READER pthread_t current_thread(void)
{
    return pthread_self();
}

static void hop_fiber(void *arg)
{
    struct hop *h = arg;
    pt__fiber_started(&h->fib.f);
    /* Stack memory that lives across every hop. */
    uint64_t local[HOPS / 8 + 1] = {0};
    for (int i = 0; i < HOPS; i++) {
        h->on_worker[i] = current_worker();
        h->on_thread[i] = current_thread();
        local[i / 8] += (uint64_t)i;
        h->heap_sum += (uint64_t)i;
        pt__fiber_switch(&h->fib.f, current_g0());
    }
    uint64_t sum = 0;
    for (size_t k = 0; k < sizeof local / sizeof local[0]; k++)
        sum += local[k];
    CHECK(sum == h->heap_sum);
    h->finished = 1;
    pt__fiber_exit(&h->fib.f, current_g0());
}

struct worker_arg {
    struct hop *h;
    int index;
};

static void *hop_worker(void *p)
{
    struct worker_arg *w = p;
    struct hop *h = w->h;
    struct pt__fiber g0;
    pt__fiber_init_thread(&g0);
    tls_g0 = &g0;
    tls_worker = w->index;
    CHECK_EQ(pthread_mutex_lock(&h->mu), 0);
    for (;;) {
        while (!h->slot[w->index] && !h->finished)
            CHECK_EQ(pthread_cond_wait(&h->cv, &h->mu), 0);
        if (h->finished)
            break;
        struct pt__fiber *f = h->slot[w->index];
        h->slot[w->index] = NULL;
        CHECK_EQ(pthread_mutex_unlock(&h->mu), 0);
        pt__fiber_switch(&g0, f);
        CHECK_EQ(pthread_mutex_lock(&h->mu), 0);
        if (!h->finished)
            h->slot[1 - w->index] = f;
        CHECK_EQ(pthread_cond_broadcast(&h->cv), 0);
    }
    CHECK_EQ(pthread_mutex_unlock(&h->mu), 0);
    return NULL;
}

void test_fiber_migrates_between_threads_and_completes(void)
{
    static struct hop h; /* large: off the test's stack */
    memset(&h, 0, sizeof h);
    CHECK_EQ(pthread_mutex_init(&h.mu, NULL), 0);
    CHECK_EQ(pthread_cond_init(&h.cv, NULL), 0);
    tfiber_make(&h.fib, hop_fiber, &h);
    h.slot[0] = &h.fib.f; /* started on worker 0 */
    struct worker_arg args[2] = {{&h, 0}, {&h, 1}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, hop_worker, &args[i]), 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK(h.finished);
    /* It really moved, every hop, and each hop saw the thread it ran on. */
    for (int i = 0; i < HOPS; i++) {
        CHECK_EQ(h.on_worker[i], i % 2);
        CHECK(pthread_equal(h.on_thread[i], t[i % 2]));
    }
    CHECK(h.heap_sum == (uint64_t)HOPS * (HOPS - 1) / 2);
    tfiber_free(&h.fib);
    pthread_cond_destroy(&h.cv);
    pthread_mutex_destroy(&h.mu);
}
