/* timerset: Seastar's timer set (seastar/core/timer-set.hh) as a ptimer
 * engine, written in C from its design, built outside ptimer against the
 * installed ptimer/engine.h alone:
 *
 *     cc -O2 -shared -fPIC $(pkg-config --cflags ptimer-engine) timerset.c -o libtimerset.so
 *     ptbench --engine ./libtimerset.so -w rpc,rpc-pending -t 1,2
 *     ptstress --engine ./libtimerset.so
 *
 * The design. Each worker keeps 64 intrusive lists ("buckets") and a mask
 * of the non-empty ones. A timer due after `last` (the time of the last
 * expiry) goes to the bucket numbered by the highest bit in which its
 * deadline differs from `last` (counted from the top: clz(when ^ last));
 * a timer due at or before `last` goes to bucket 0, which a positive time
 * never needs otherwise (bit 63 of two positive times never differs).
 * Arming is a list push and a bit set, cancelling an unlink and maybe a
 * bit clear: O(1) both, nothing sorted. Sorting is deferred to expiry:
 * every bucket above now's own number holds only due timers (they agree
 * with `last` above a lower bit than now does, and now is past `last`
 * there), so they expire wholesale; now's own bucket is split timer by
 * timer, the later ones filed again against the new `last`. A design
 * "optimized for timer non-delivery": a cancelled timer never costs a
 * comparison. `next`, the earliest deadline, is a lower bound only: a
 * cancel does not raise it (an early wake-up costs less than a scan).
 *
 * Threads: Seastar's sets are per shard, touched by their own thread
 * only. Here other threads may arm and stop timer objects (ptstress), so
 * each worker's set has a mutex; callbacks run outside it.
 *
 * Built with -DTIMERSET_BROKEN, tm_stop reports a pending timer stopped
 * but leaves it armed: the bug ptstress must name (fired-after-stop). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ptimer/engine.h>

#define NBUCKETS 64
#define CHUNK 4096 /* handle timers per slab chunk: they never move */

enum { T_FREE, T_PENDING, T_EXPIRED, T_IDLE };

struct tset;

struct ttimer {
    struct ttimer *next, *prev; /* a bucket, the expired list, or the free list */
    int64_t when, period;
    void *arg;
    uint32_t gen;  /* handle timers: bumped each time it is freed */
    uint32_t slot; /* handle timers: where in the slab */
    uint8_t state, bucket;
    bool object;               /* a timer object (tm_*), not a handle's */
    bool running;              /* objects: a callback of it runs */
    struct tset *_Atomic home; /* objects: the set that holds it */
};

struct tset {
    pthread_mutex_t mu;
    pthread_cond_t cv;               /* idle's sleep; tm_free's wait for a callback */
    bool sleeping;                   /* the worker waits on cv */
    int64_t last, next;              /* the last expiry; a lower bound on the earliest */
    uint64_t mask;                   /* bit b: bucket b is non-empty */
    struct ttimer buckets[NBUCKETS]; /* list heads */
    struct ttimer expired;           /* due, not yet run */
    size_t count;                    /* timers in buckets and expired */
    struct ttimer **chunks;          /* handle timers' slab */
    uint32_t nchunks, nslots;
    size_t cap; /* chunks' room */
    struct ttimer *free;
    struct teng *eng;
};

struct teng {
    pt_engine_cb cb;
    int n;
    atomic_ulong wakeups;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void list_init(struct ttimer *h)
{
    h->next = h->prev = h;
}
static bool list_empty(const struct ttimer *h)
{
    return h->next == h;
}
static void list_push(struct ttimer *h, struct ttimer *t)
{
    t->prev = h->prev;
    t->next = h;
    h->prev->next = t;
    h->prev = t;
}
static void list_del(struct ttimer *t)
{
    t->prev->next = t->next;
    t->next->prev = t->prev;
    t->next = t->prev = t;
}

/* ---- the timer set --------------------------------------------------- */

static unsigned bucket_of(const struct tset *s, int64_t when)
{
    return when <= s->last ? 0 : (unsigned)__builtin_clzll((uint64_t)(when ^ s->last));
}

static void ts_insert(struct tset *s, struct ttimer *t)
{
    unsigned b = bucket_of(s, t->when);
    list_push(&s->buckets[b], t);
    s->mask |= 1ull << b;
    t->bucket = (uint8_t)b;
    t->state = T_PENDING;
    if (t->when < s->next)
        s->next = t->when;
    s->count++;
}

static void ts_remove(struct tset *s, struct ttimer *t)
{
    if (t->state == T_PENDING && t->next->next == t) /* its bucket's only one */
        s->mask &= ~(1ull << t->bucket);
    list_del(t);
    s->count--;
}

/* Moves every timer due at `now` to the expired list. */
static void ts_expire(struct tset *s, int64_t now)
{
    unsigned split = bucket_of(s, now);
    /* buckets numbered above now's, and bucket 0: due, wholesale */
    uint64_t due = s->mask & 1;
    if (split != 0 && split != 63)
        due |= s->mask & (~0ull << (split + 1));
    while (due) {
        unsigned b = (unsigned)__builtin_ctzll(due);
        due &= due - 1;
        struct ttimer *h = &s->buckets[b];
        for (struct ttimer *t = h->next; t != h; t = t->next)
            t->state = T_EXPIRED;
        /* splice the whole list onto expired */
        h->next->prev = s->expired.prev;
        s->expired.prev->next = h->next;
        h->prev->next = &s->expired;
        s->expired.prev = h->prev;
        list_init(h);
        s->mask &= ~(1ull << b);
    }
    s->last = now;
    s->next = INT64_MAX;
    if (split != 0 && (s->mask >> split & 1)) { /* now's own bucket: split */
        struct ttimer held, *h = &s->buckets[split];
        list_init(&held);
        while (!list_empty(h)) {
            struct ttimer *t = h->next;
            list_del(t);
            list_push(&held, t);
        }
        s->mask &= ~(1ull << split);
        while (!list_empty(&held)) {
            struct ttimer *t = held.next;
            list_del(t);
            s->count--;
            if (t->when <= now) {
                t->state = T_EXPIRED;
                list_push(&s->expired, t);
                s->count++;
            } else {
                ts_insert(s, t); /* against the new last */
            }
        }
    }
    if (s->next == INT64_MAX && s->mask) {
        /* the nearest timers are in the highest-numbered bucket */
        unsigned b = 63 - (unsigned)__builtin_clzll(s->mask);
        for (struct ttimer *t = s->buckets[b].next; t != &s->buckets[b]; t = t->next)
            if (t->when < s->next)
                s->next = t->when;
    }
}

/* ---- handle timers ----------------------------------------------------- */

static struct ttimer *slot_at(struct tset *s, uint32_t slot)
{
    return &s->chunks[slot / CHUNK][slot % CHUNK];
}

static bool grow(struct tset *s)
{
    struct ttimer **c = s->chunks;
    if (s->nchunks >= s->cap) { /* t_reserve may have made room */
        size_t cap = s->cap ? 2 * s->cap : 16;
        if (!(c = realloc(s->chunks, cap * sizeof *c)))
            return false;
        s->chunks = c;
        s->cap = cap;
    }
    struct ttimer *chunk = calloc(CHUNK, sizeof *chunk);
    if (!chunk)
        return false;
    c[s->nchunks++] = chunk;
    for (int i = CHUNK - 1; i >= 0; i--) {
        chunk[i].gen = 1;
        chunk[i].slot = s->nslots + (uint32_t)i;
        chunk[i].next = s->free;
        s->free = &chunk[i];
    }
    s->nslots += CHUNK;
    return true;
}

static void slot_free(struct tset *s, struct ttimer *t)
{
    t->state = T_FREE;
    if (++t->gen == 0)
        t->gen = 1;
    t->next = s->free;
    s->free = t;
}

/* The timer a handle names, if it is still pending (or due, not run). */
static struct ttimer *by_handle(struct tset *s, pt_engine_handle h)
{
    uint32_t slot = (uint32_t)(h >> 32), gen = (uint32_t)h;
    if (slot >= s->nslots)
        return NULL;
    struct ttimer *t = slot_at(s, slot);
    return t->gen == gen && (t->state == T_PENDING || t->state == T_EXPIRED) ? t : NULL;
}

/* ---- firing ------------------------------------------------------------ */

static _Thread_local int64_t firing_when = -1, firing_now = -1;

static void wake(struct tset *s)
{
    if (s->sleeping)
        pthread_cond_broadcast(&s->cv);
}

/* Runs every due timer of s; called with s->mu held, returns with it. */
static void run_due(struct tset *s, int64_t now)
{
    if (now < s->next && list_empty(&s->expired))
        return;
    ts_expire(s, now);
    while (!list_empty(&s->expired)) {
        struct ttimer *t = s->expired.next;
        list_del(t);
        s->count--;
        void *arg = t->arg;
        int64_t when = t->when;
        if (t->period > 0) { /* as Go: the next tick after now, none skipped twice */
            t->when += t->period * (1 + (now - t->when) / t->period);
            ts_insert(s, t);
        } else if (t->object) {
            t->state = T_IDLE;
        } else {
            slot_free(s, t);
        }
        if (t->object)
            t->running = true;
        pthread_mutex_unlock(&s->mu);
        firing_when = when;
        firing_now = now;
        s->eng->cb(arg);
        firing_when = firing_now = -1;
        if (t->object) {
            /* it may have moved meanwhile: clear it under its home's lock */
            for (;;) {
                struct tset *h = atomic_load(&t->home);
                pthread_mutex_lock(&h->mu);
                if (h == atomic_load(&t->home)) {
                    t->running = false;
                    pthread_cond_broadcast(&h->cv);
                    if (h != s) {
                        pthread_mutex_unlock(&h->mu);
                        pthread_mutex_lock(&s->mu);
                    }
                    break;
                }
                pthread_mutex_unlock(&h->mu);
            }
        } else {
            pthread_mutex_lock(&s->mu);
        }
    }
}

/* ---- the engine table's ops ------------------------------------------- */

static void *t_create(int n, pt_engine_cb cb)
{
    struct teng *e = calloc(1, sizeof *e);
    if (e) {
        e->cb = cb;
        e->n = n;
    }
    return e;
}

static void t_destroy(void *eng)
{
    free(eng);
}

static void *t_thread_start(void *eng, int worker)
{
    (void)worker;
    struct tset *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &a);
    pthread_condattr_destroy(&a);
    for (int b = 0; b < NBUCKETS; b++)
        list_init(&s->buckets[b]);
    list_init(&s->expired);
    s->last = now_ns();
    s->next = INT64_MAX;
    s->eng = eng;
    return s;
}

static void t_thread_stop(void *th)
{
    struct tset *s = th;
    /* handle timers go with their slab; objects still here are the
     * caller's to free (tm_free comes first) */
    for (uint32_t c = 0; c < s->nchunks; c++)
        free(s->chunks[c]);
    free(s->chunks);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static pt_engine_handle t_schedule(void *th, pt_engine_time when, pt_engine_time period, void *arg)
{
    struct tset *s = th;
    pthread_mutex_lock(&s->mu);
    if (!s->free && !grow(s)) {
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    struct ttimer *t = s->free;
    s->free = t->next;
    t->when = when;
    t->period = period;
    t->arg = arg;
    ts_insert(s, t);
    pt_engine_handle h = (uint64_t)t->slot << 32 | t->gen;
    pthread_mutex_unlock(&s->mu);
    return h;
}

static bool t_cancel(void *th, pt_engine_handle h)
{
    struct tset *s = th;
    pthread_mutex_lock(&s->mu);
    struct ttimer *t = by_handle(s, h);
    if (t) {
        ts_remove(s, t);
        slot_free(s, t);
    }
    pthread_mutex_unlock(&s->mu);
    return t != NULL;
}

static pt_engine_handle t_reset(void *th, pt_engine_handle h, pt_engine_time when, void *arg)
{
    struct tset *s = th;
    pthread_mutex_lock(&s->mu);
    struct ttimer *t = by_handle(s, h);
    if (t) {
        ts_remove(s, t);
        t->when = when;
        t->arg = arg;
        ts_insert(s, t);
    }
    pthread_mutex_unlock(&s->mu);
    return t ? h : 0;
}

static void t_poll(void *th)
{
    struct tset *s = th;
    pthread_mutex_lock(&s->mu);
    run_due(s, now_ns());
    pthread_mutex_unlock(&s->mu);
}

static void t_idle(void *th, pt_engine_time until)
{
    struct tset *s = th;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        int64_t now = now_ns();
        run_due(s, now);
        if (now >= until)
            break;
        int64_t to = s->next < until ? s->next : until;
        if (to > now) {
            struct timespec ts = {to / 1000000000, to % 1000000000};
            s->sleeping = true;
            pthread_cond_timedwait(&s->cv, &s->mu, &ts);
            s->sleeping = false;
            atomic_fetch_add_explicit(&s->eng->wakeups, 1, memory_order_relaxed);
        }
    }
    pthread_mutex_unlock(&s->mu);
}

static void t_read_stats(void *eng, struct pt_engine_stats *out)
{
    out->wakeups = atomic_load(&((struct teng *)eng)->wakeups);
}

/* Room for n more timers in the slab's index (a pointer a chunk), not
 * the timers themselves: they are what the memory workload measures. */
static void t_reserve(void *th, long n)
{
    struct tset *s = th;
    pthread_mutex_lock(&s->mu);
    size_t want = s->nchunks + (size_t)(n + CHUNK - 1) / CHUNK;
    struct ttimer **c = want > s->cap ? realloc(s->chunks, want * sizeof *c) : NULL;
    if (c) {
        s->chunks = c;
        s->cap = want;
    }
    pthread_mutex_unlock(&s->mu);
}

/* ---- timer objects ------------------------------------------------------ */

/* Locks the set that holds tm now (it may move between read and lock). */
static struct tset *lock_home(struct ttimer *t)
{
    for (;;) {
        struct tset *h = atomic_load(&t->home);
        if (!h)
            return NULL;
        pthread_mutex_lock(&h->mu);
        if (h == atomic_load(&t->home))
            return h;
        pthread_mutex_unlock(&h->mu);
    }
}

/* Locks the set an arming from th puts tm in: th's, for a timer that is
 * not pending (it joins th on its first arming, and an idle one moves
 * there: it names no list); a pending one stays where it is. */
static struct tset *lock_for_arm(struct ttimer *t, struct tset *th)
{
    struct tset *none = NULL;
    atomic_compare_exchange_strong(&t->home, &none, th);
    for (;;) {
        struct tset *s = lock_home(t);
        if (s == th || t->state == T_PENDING || t->state == T_EXPIRED)
            return s;
        atomic_store(&t->home, th); /* under s's lock, which held it */
        pthread_mutex_unlock(&s->mu);
    }
}

static void *t_tm_new(void *eng)
{
    (void)eng;
    struct ttimer *t = calloc(1, sizeof *t);
    if (t) {
        t->object = true;
        t->state = T_IDLE;
        t->next = t->prev = t;
    }
    return t;
}

/* Unlinks t if it is pending or due; 1 if it was. Under its home's lock. */
static int unarm(struct tset *s, struct ttimer *t)
{
    if (t->state != T_PENDING && t->state != T_EXPIRED)
        return 0;
    ts_remove(s, t);
    t->state = T_IDLE;
    return 1;
}

/* Files an armed timer object in s (locked), waking s's worker if it is
 * now the earliest, and unlocks s. */
static void file_and_unlock(struct tset *s, struct ttimer *t)
{
    int64_t before = s->next;
    ts_insert(s, t);
    if (t->when < before)
        wake(s);
    pthread_mutex_unlock(&s->mu);
}

static int t_tm_arm(void *th, void *tm, pt_engine_time when, pt_engine_time period, void *arg)
{
    struct ttimer *t = tm;
    struct tset *s = lock_for_arm(t, th);
    int was = unarm(s, t);
    t->when = when;
    t->period = period;
    t->arg = arg;
    file_and_unlock(s, t);
    return was;
}

static int t_tm_stop(void *tm)
{
    struct ttimer *t = tm;
    struct tset *s = lock_home(t);
    if (!s)
        return 0;
#ifdef TIMERSET_BROKEN
    int was = t->state == T_PENDING || t->state == T_EXPIRED; /* and still armed */
#else
    int was = unarm(s, t);
#endif
    pthread_mutex_unlock(&s->mu);
    return was;
}

static void t_tm_free(void *tm)
{
    struct ttimer *t = tm;
    struct tset *s = lock_home(t);
    if (s) {
        unarm(s, t);
        while (t->running) { /* its end broadcasts on its home's cv; a
                                move meanwhile changes which: look again */
            int64_t until = now_ns() + 1000000;
            struct timespec ts = {until / 1000000000, until % 1000000000};
            pthread_cond_timedwait(&s->cv, &s->mu, &ts);
            pthread_mutex_unlock(&s->mu);
            s = lock_home(t);
        }
        pthread_mutex_unlock(&s->mu);
    }
    free(t);
}

static int t_tm_start(void *th, void *tm, pt_engine_time when)
{
    struct ttimer *t = tm;
    struct tset *s = lock_for_arm(t, th);
    if (t->state == T_PENDING || t->state == T_EXPIRED) {
        pthread_mutex_unlock(&s->mu);
        return -EBUSY;
    }
    t->when = when;
    file_and_unlock(s, t);
    return 0;
}

static int t_tm_reset(void *th, void *tm, pt_engine_time when)
{
    struct ttimer *t = tm;
    struct tset *s = lock_for_arm(t, th);
    int was = unarm(s, t);
    t->when = when;
    file_and_unlock(s, t);
    return was;
}

static int t_tm_firing(pt_engine_time *when, pt_engine_time *now)
{
    if (firing_when < 0)
        return -1;
    *when = firing_when;
    *now = firing_now;
    return 0;
}

/* Every pending timer object of src onto dst (src's worker is going
 * away); an idle one moves to whichever set arms it next (lock_for_arm).
 * Handle timers stay: their handles name src's slab, and only their own
 * worker, which is src's, arms and cancels them. */
static int t_move(void *dst, void *src)
{
    struct tset *d = dst, *s = src;
    if (d == s)
        return 0;
    struct tset *first = d < s ? d : s, *second = d < s ? s : d;
    pthread_mutex_lock(&first->mu);
    pthread_mutex_lock(&second->mu);
    struct ttimer *lists[NBUCKETS + 1];
    for (int b = 0; b < NBUCKETS; b++)
        lists[b] = &s->buckets[b];
    lists[NBUCKETS] = &s->expired;
    int64_t before = d->next;
    for (int b = 0; b <= NBUCKETS; b++) {
        struct ttimer *h = lists[b];
        for (struct ttimer *t = h->next, *nx; t != h; t = nx) {
            nx = t->next;
            if (!t->object)
                continue;
            ts_remove(s, t);
            ts_insert(d, t); /* a due one is due there too */
            atomic_store(&t->home, d);
        }
    }
    if (d->next < before)
        wake(d);
    pthread_mutex_unlock(&second->mu);
    pthread_mutex_unlock(&first->mu);
    return 0;
}

static size_t t_held(void *th)
{
    struct tset *s = th;
    pthread_mutex_lock(&s->mu);
    size_t n = s->count;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* The set's invariants: every timer in the bucket its deadline's highest
 * differing bit names, the mask saying which are non-empty, `next` no
 * later than any deadline, the count right. */
static const char *t_check(void *th, bool quiescent)
{
    (void)quiescent;
    struct tset *s = th;
    const char *bad = NULL;
    pthread_mutex_lock(&s->mu);
    size_t n = 0;
    for (unsigned b = 0; b < NBUCKETS && !bad; b++) {
        struct ttimer *h = &s->buckets[b];
        if (list_empty(h) == ((s->mask >> b & 1) != 0))
            bad = "the mask disagrees with a bucket's list";
        for (struct ttimer *t = h->next; t != h && !bad; t = t->next, n++) {
            if (t->state != T_PENDING || t->bucket != b)
                bad = "a timer in a bucket is not pending there";
            else if (bucket_of(s, t->when) != b)
                bad = "a timer is in a bucket its deadline does not name";
            else if (t->when < s->next)
                bad = "next is later than a pending deadline";
        }
    }
    for (struct ttimer *t = s->expired.next; t != &s->expired && !bad; t = t->next, n++)
        if (t->state != T_EXPIRED)
            bad = "a timer on the expired list is not due";
    if (!bad && n != s->count)
        bad = "the count disagrees with the lists";
    pthread_mutex_unlock(&s->mu);
    return bad;
}

static const struct pt_engine timerset = {
    .abi = PT_ENGINE_ABI,
    .size = sizeof(struct pt_engine),
#ifdef TIMERSET_BROKEN
    .name = "timerset-broken",
    .what = "Seastar's timer set whose stop leaves the timer armed (a test)",
#else
    .name = "timerset",
    .what = "Seastar's timer set: 64 buckets by the highest bit differing from the last expiry",
#endif
    .timer_bytes = sizeof(struct ttimer),
    .create = t_create,
    .destroy = t_destroy,
    .thread_start = t_thread_start,
    .thread_stop = t_thread_stop,
    .schedule = t_schedule,
    .cancel = t_cancel,
    .reset = t_reset,
    .poll = t_poll,
    .idle = t_idle,
    .tm_new = t_tm_new,
    .tm_arm = t_tm_arm,
    .tm_stop = t_tm_stop,
    .tm_free = t_tm_free,
    .read_stats = t_read_stats,
    .reserve_handles = t_reserve,
    .tm_start = t_tm_start,
    .tm_reset = t_tm_reset,
    .tm_firing = t_tm_firing,
    .move = t_move,
    .held = t_held,
    .check = t_check,
};

PT_ENGINE_EXPORT(timerset)
