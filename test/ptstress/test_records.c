/* ptstress's arming records (stress/stress.h): a record's fields are
 * always those of the arming its word names, however many threads open
 * records of one ring at once. A record with one arming's word and
 * another's deadline is how a firing on time was reported early. */
#include <pthread.h>
#include <stdatomic.h>

#include "harness.h"
#include "stress.h"

#define MS ((pt_nanos)1000000)

#ifdef PT__SANITIZED
#define RACE_MS 200
#else
#define RACE_MS 500
#endif

/* Arming seq's deadline, in the tests below: each its own. */
static pt_nanos deadline_of(uint64_t seq)
{
    return (pt_nanos)seq * MS;
}

static uint64_t word_of(const struct arm_rec *a)
{
    return atomic_load(&a->word);
}

void test_arming_record_is_left_alone_while_another_arming_writes_it(void)
{
    /* Arming 5 is between its claim and its publication (its thread was
     * preempted there) when arming 5 + 256, of the same record, opens. */
    static struct arm_rec ring[ARM_RING];
    struct arm_rec *a = &ring[5];
    atomic_store(&a->word, arm_word(5, A_OPENING));
    atomic_store(&a->when, deadline_of(5));
    CHECK(arm_open(ring, ARM_RING, 5 + ARM_RING, deadline_of(5 + ARM_RING), 0) == NULL);
    CHECK_EQ(word_of(a), arm_word(5, A_OPENING));
    CHECK_EQ(atomic_load(&a->when), deadline_of(5));
    /* Arming 5 + 256's firing finds another arming's word: untracked. */
    enum arm_state seen;
    CHECK(!arm_move(ring, ARM_RING, 5 + ARM_RING, A_PENDING, A_FIRED, &seen));
    CHECK_EQ(seen, 0);
}

void test_older_arming_leaves_a_newer_armings_record_alone(void)
{
    /* Arming 5's thread stalled between numbering it and opening it, and
     * arming 5 + 256 has its record already. */
    static struct arm_rec ring[ARM_RING];
    CHECK(arm_open(ring, ARM_RING, 5 + ARM_RING, deadline_of(5 + ARM_RING), 0) == &ring[5]);
    CHECK(arm_open(ring, ARM_RING, 5, deadline_of(5), 0) == NULL);
    CHECK_EQ(word_of(&ring[5]), arm_word(5 + ARM_RING, A_PENDING));
    CHECK_EQ(atomic_load(&ring[5].when), deadline_of(5 + ARM_RING));
}

void test_newer_arming_reuses_a_written_record_and_an_arming_may_reopen_its_own(void)
{
    static struct arm_rec ring[ARM_RING];
    CHECK(arm_open(ring, ARM_RING, 5, deadline_of(5), 0) == &ring[5]);
    enum arm_state seen;
    CHECK(arm_move(ring, ARM_RING, 5, A_PENDING, A_FIRED, &seen));
    CHECK(arm_open(ring, ARM_RING, 5 + ARM_RING, deadline_of(5 + ARM_RING), 2 * MS) == &ring[5]);
    CHECK_EQ(word_of(&ring[5]), arm_word(5 + ARM_RING, A_PENDING));
    CHECK_EQ(atomic_load(&ring[5].when), deadline_of(5 + ARM_RING));
    CHECK_EQ(atomic_load(&ring[5].period), 2 * MS);
    /* The one writer of a ring (a ticker's, under its lock) opens the same
     * arming again after its arm failed: the record takes the new fields. */
    CHECK(arm_open(ring, ARM_RING, 5 + ARM_RING, deadline_of(7), 0) == &ring[5]);
    CHECK_EQ(atomic_load(&ring[5].when), deadline_of(7));
}

/* ---- racing openers ------------------------------------------------------
 * Threads number armings with one fetch_add and open them on a ring of one
 * record, as modtimer's contended timers do on a ring of 256 (one record
 * makes every pair of armings collide); each then reads the record back.
 * A published arming's deadline must be its own. Four threads: on two
 * cores some are preempted inside arm_open, where two writers used to
 * interleave; on more they run there side by side. */

#define OPENERS 4

static struct arm_rec one[1];
static _Atomic uint64_t next_seq;
static atomic_bool stop_all;
static _Atomic uint64_t torn, opened, checked;

static void *opener(void *arg)
{
    (void)arg;
    uint64_t n = 0, seen_ok = 0;
    while (!atomic_load_explicit(&stop_all, memory_order_relaxed)) {
        uint64_t seq = atomic_fetch_add(&next_seq, 1) + 1;
        n += arm_open(one, 1, seq, deadline_of(seq), 0) != NULL;
        /* Read it back: word, deadline, and the word again unchanged, so
         * the deadline read is the published record's. */
        uint64_t w = atomic_load_explicit(&one[0].word, memory_order_acquire);
        pt_nanos when = atomic_load_explicit(&one[0].when, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if ((w & 0xff) != A_PENDING ||
            atomic_load_explicit(&one[0].word, memory_order_relaxed) != w)
            continue; /* being written, or rewritten meanwhile */
        seen_ok++;
        if (when != deadline_of(w >> 8))
            atomic_fetch_add(&torn, 1);
    }
    atomic_fetch_add(&opened, n);
    atomic_fetch_add(&checked, seen_ok);
    return NULL;
}

void test_racing_openers_never_publish_a_record_with_another_armings_deadline(void)
{
    pthread_t th[OPENERS];
    for (int i = 0; i < OPENERS; i++)
        CHECK(pthread_create(&th[i], NULL, opener, NULL) == 0);
    pt_nanos end = pt_nanotime() + RACE_MS * MS;
    while (pt_nanotime() < end && !atomic_load(&torn))
        sched_yield();
    atomic_store(&stop_all, true);
    for (int i = 0; i < OPENERS; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    fprintf(stderr, "%llu armings numbered, %llu opened, %llu read back, %llu torn\n",
            (unsigned long long)atomic_load(&next_seq), (unsigned long long)atomic_load(&opened),
            (unsigned long long)atomic_load(&checked), (unsigned long long)atomic_load(&torn));
    CHECK(atomic_load(&checked) > 0);
    CHECK_EQ(atomic_load(&torn), 0);
}
