/* A witness of the machine's stalls: a thread that sleeps 1 ms at a time
 * and keeps the sleeps that ended far later than asked. A late firing
 * printed beside a stall of the same size that this thread also saw was
 * a machine that ran nothing of the process (a VM's CPUs taken away, a
 * host under load): a sleeper woken from a sleep is the first thread the
 * kernel runs again. A late firing with no such stall beside it is the
 * design's. The witness excuses nothing: the violation stands either way,
 * the line only says which it was. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "stress.h"

#define SLEEP_NS ((pt_nanos)1000000)
/* An oversleep worth keeping: a tick of HZ=250, and more. */
#define KEEP_NS ((pt_nanos)4000000)
#define KEPT 4096

static struct {
    pthread_mutex_t lock;
    pthread_t thread;
    atomic_bool stop, running;
    /* the sleep under way began then: a stall that has just ended is
     * seen by whoever looks before the witness itself wakes */
    _Atomic pt_nanos since;
    struct gap {
        pt_nanos end, over;
    } kept[KEPT];
    unsigned next; /* the ring's next slot (lock) */
    unsigned n;    /* slots filled (lock) */
} w = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *watch(void *arg)
{
    (void)arg;
    while (!atomic_load(&w.stop)) {
        pt_nanos t0 = pt_nanotime();
        atomic_store(&w.since, t0);
        struct timespec ts = {0, (long)SLEEP_NS};
        nanosleep(&ts, NULL);
        pt_nanos t1 = pt_nanotime();
        atomic_store(&w.since, 0);
        if (t1 - t0 - SLEEP_NS < KEEP_NS)
            continue;
        pthread_mutex_lock(&w.lock);
        w.kept[w.next] = (struct gap){t1, t1 - t0 - SLEEP_NS};
        w.next = (w.next + 1) % KEPT;
        if (w.n < KEPT)
            w.n++;
        pthread_mutex_unlock(&w.lock);
    }
    return NULL;
}

void witness_start(void)
{
    if (atomic_load(&w.running))
        return;
    atomic_store(&w.stop, false);
    if (pthread_create(&w.thread, NULL, watch, NULL) == 0)
        atomic_store(&w.running, true);
}

void witness_stop(void)
{
    if (!atomic_load(&w.running))
        return;
    atomic_store(&w.stop, true);
    pthread_join(w.thread, NULL);
    atomic_store(&w.running, false);
}

pt_nanos witness_gap(pt_nanos from, pt_nanos to, pt_nanos *at)
{
    pt_nanos best = 0;
    *at = 0;
    pthread_mutex_lock(&w.lock);
    for (unsigned i = 0; i < w.n; i++) {
        const struct gap *g = &w.kept[i];
        /* the sleep overlapped the window */
        if (g->end >= from && g->end - g->over - SLEEP_NS <= to && g->over > best) {
            best = g->over;
            *at = g->end;
        }
    }
    pthread_mutex_unlock(&w.lock);
    pt_nanos since = atomic_load(&w.since), now = pt_nanotime();
    if (since && since <= to && now - since - SLEEP_NS > best && now - since - SLEEP_NS >= KEEP_NS) {
        best = now - since - SLEEP_NS; /* still asleep: overslept this much so far */
        *at = now;
    }
    return best;
}
