/* What the status machine refuses: a corrupt status aborts with the
 * status and the operation named (in a forked child), and bad arguments
 * get a negative errno and change nothing. */

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

/* ---- corruption ------------------------------------------------------- */

/* Run body in a fork()ed child with stderr on a pipe; assert the child died
 * of SIGABRT and said "corrupt timer", the status and the operation. */
static void expect_corrupt(void (*body)(void), const char *status, const char *op)
{
    int fd[2];
    CHECK_EQ(pipe(fd), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        body();
        _exit(0); /* no abort: the parent reports it */
    }
    close(fd[1]);
    char buf[4096];
    size_t len = 0;
    ssize_t r;
    while ((r = read(fd[0], buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = 0;
    close(fd[0]);
    int wst;
    CHECK_EQ(waitpid(pid, &wst, 0), pid);
    if (!WIFSIGNALED(wst) || WTERMSIG(wst) != SIGABRT || !strstr(buf, "corrupt timer") ||
        !strstr(buf, status) || !strstr(buf, op)) {
        fprintf(stderr, "child status %#x, wanted SIGABRT with \"%s\" and \"%s\"; stderr:\n%s\n",
                wst, status, op, buf);
        CHECK(!"child did not abort as corrupt");
    }
}

/* A fresh heap with one timer started at 1000, its status word then
 * overwritten with `status`. */
static void forced_status(pt_timers *ts, pt_timer *t, uint32_t status)
{
    pt_timers_init(ts, NULL, NULL);
    pt_timer_init(t, count_cb, NULL);
    pt_timer_start(ts, t, 1000, 0);
    force_status(t, status);
}

static void corrupt_status_then_stop(void)
{
    pt_timers ts;
    pt_timer t;
    forced_status(&ts, &t, 14);
    pt_timer_stop(&t);
}

static void corrupt_status_then_reset(void)
{
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    pt_timer t;
    pt_timer_init(&t, count_cb, NULL);
    force_status(&t, 14);
    pt_timer_reset(&ts, &t, 1000);
}

static void nostatus_in_heap_then_check(void)
{
    pt_timers ts;
    pt_timer t;
    forced_status(&ts, &t, PT_TIMER_NOSTATUS);
    pt_timers_check(&ts, 1000, true, NULL);
}

static void running_in_heap_then_adjust(void)
{
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    pt_timer t, u;
    pt_timer_init(&t, count_cb, NULL);
    pt_timer_init(&u, count_cb, NULL);
    pt_timer_start(&ts, &t, 1000, 0);
    pt_timer_start(&ts, &u, 5000, 0);
    pt_timer_reset(&ts, &u, 2000); /* modified_earliest 2000: adjust at 2000 */
    force_status(&t, PT_TIMER_RUNNING);
    pt_timers_check(&ts, 2000, false, NULL);
}

static void removed_in_heap_then_move(void)
{
    pt_timers a, b;
    pt_timer t;
    forced_status(&a, &t, PT_TIMER_REMOVED);
    pt_timers_init(&b, NULL, NULL);
    pt_timers_move(&b, &a);
}

void test_corrupt_status_aborts_with_status_and_operation(void)
{
    expect_corrupt(corrupt_status_then_stop, "(14)", " in stop");
    expect_corrupt(corrupt_status_then_reset, "(14)", " in reset");
    expect_corrupt(nostatus_in_heap_then_check, "NoStatus (0)", " in run");
    expect_corrupt(running_in_heap_then_adjust, "Running (2)", " in adjust");
    expect_corrupt(removed_in_heap_then_move, "Removed (5)", " in move");
}

/* ---- bad input -------------------------------------------------------- */

/* pt_timers_verify finds what corruption leaves (and its report says what):
 * a timer whose word names another heap, a waiting timer whose when is
 * not its key; and passes again once they are mended. */
void test_verify_reports_a_timer_naming_another_heap_or_off_its_key(void)
{
    pt_timers a, b;
    pt_timer t[2];
    int n = 0;
    started_timers(&a, t, 2, &n, 1000, 10);
    pt_timers_init(&b, NULL, NULL);
    CHECK_VERIFIED(&a, true);
    uint64_t w = atomic_load(&t[1].state);
    atomic_store(&t[1].state, (w & PT__STATE_LOW_MASK) | st_pack(&b, 0));
    CHECK_EQ(pt_timers_verify(&a, true), -EUCLEAN);
    CHECK(strstr(pt_timers_verify_report(), "names heap"));
    atomic_store(&t[1].state, w);
    CHECK_VERIFIED(&a, true);
    CHECK_EQ(pt_timers_verify_report()[0], '\0');
    /* not a timer's word, though its status bits read Waiting: reported,
     * not touched (a status CAS on it would abort in the restore) */
    atomic_store(&t[1].state, w ^ PT__STATE_CHECK);
    CHECK_EQ(pt_timers_verify(&a, true), -EUCLEAN);
    CHECK(strstr(pt_timers_verify_report(), "is not a timer"));
    CHECK_EQ(atomic_load(&t[1].state), w ^ PT__STATE_CHECK);
    atomic_store(&t[1].state, w);
    CHECK_VERIFIED(&a, true);
    t[0].when += 5;
    CHECK_EQ(pt_timers_verify(&a, true), -EUCLEAN);
    CHECK(strstr(pt_timers_verify_report(), "has when"));
    t[0].when -= 5;
    CHECK_VERIFIED(&a, true);
    CHECK_EQ(n, 0);
    teardown(&a, t, 2);
    CHECK_EQ(pt_timers_destroy(&b), 0);
}

/* The state word's three parts (pheap/status.h) never bleed into each
 * other, and a heap address that does not fit is refused. */
void test_state_word_keeps_heap_status_and_check_apart(void)
{
    pt_timers ts;
    pt_timers *heaps[] = {NULL, &ts, (pt_timers *)(uintptr_t)UINT64_C(0xfffffffffff8)};
    for (size_t h = 0; h < sizeof heaps / sizeof heaps[0]; h++)
        for (uint32_t s = PT_TIMER_NOSTATUS; s <= PT_TIMER_MOVING; s++) {
            uint64_t w = st_pack(heaps[h], s);
            CHECK(st_heap(w) == heaps[h]);
            CHECK_EQ(st_status(w), s);
            CHECK_EQ(w & PT__STATE_CHECK_MASK, PT__STATE_CHECK);
        }
    CHECK(st_heap_fits(&ts));
    CHECK(st_heap_fits((pt_timers *)(uintptr_t)UINT64_C(0xffffffffffff)));
#if UINTPTR_MAX > 0xffffffffu
    CHECK(!st_heap_fits((pt_timers *)(uintptr_t)UINT64_C(0x1000000000000)));
    CHECK(!st_heap_fits((pt_timers *)(uintptr_t)(UINT64_C(0x5a) << 56 | (uintptr_t)&ts)));
    CHECK_EQ(sizeof(pt_timer), 56);
#endif
    pt_timer t;
    pt_timer_init(&t, count_cb, NULL);
    CHECK_EQ(atomic_load(&t.state), st_pack(NULL, PT_TIMER_NOSTATUS));
    /* Every transition helper, between every pair of statuses: the
     * status flips, the heap and the check stay (or the heap moves, for
     * the _in and claim forms). */
    for (uint32_t from = PT_TIMER_NOSTATUS; from <= PT_TIMER_MOVING; from++)
        for (uint32_t to = PT_TIMER_NOSTATUS; to <= PT_TIMER_MOVING; to++) {
            atomic_store(&t.state, st_pack(&ts, from));
            CHECK(!st_cas(&t, st_pack(NULL, from), to)); /* another heap: no */
            CHECK(st_cas(&t, st_pack(&ts, from), to));
            CHECK_EQ(atomic_load(&t.state), st_pack(&ts, to));
            st_set(&t, to, from, "test");
            CHECK_EQ(atomic_load(&t.state), st_pack(&ts, from));
            st_set_in(&t, from, to, NULL, "test");
            CHECK_EQ(atomic_load(&t.state), st_pack(NULL, to));
        }
    st_claim(&t, &ts);
    CHECK_EQ(atomic_load(&t.state), st_pack(&ts, PT_TIMER_MODIFYING));
    atomic_store(&t.state, st_pack(NULL, PT_TIMER_NOSTATUS));
}

void test_null_arguments_return_einval_and_change_nothing(void)
{
    pt_timers ts;
    pt_timer t;
    int n = 0;
    counting_timers(&ts, &t, 1, &n);
    pt_timers_init(NULL, NULL, NULL); /* no crash */
    pt_timer_init(NULL, count_cb, NULL);
    CHECK_EQ(pt_timer_start(NULL, &t, 1000, 0), -EINVAL);
    CHECK_EQ(pt_timer_start(&ts, NULL, 1000, 0), -EINVAL);
    CHECK_EQ(pt_timer_reset(NULL, &t, 1000), -EINVAL);
    CHECK_EQ(pt_timer_reset(&ts, NULL, 1000), -EINVAL);
    CHECK_EQ(pt_timer_modify(NULL, &t, 1000, 0, count_cb, &n, 0), -EINVAL);
    CHECK_EQ(pt_timer_modify(&ts, NULL, 1000, 0, count_cb, &n, 0), -EINVAL);
    CHECK_EQ(pt_timer_stop(NULL), -EINVAL);
    CHECK_EQ(pt_timer_stop_sync(NULL), -EINVAL);
    CHECK_EQ(pt_timer_status(NULL), PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timers_check(NULL, 1000, true, NULL), -EINVAL);
    CHECK_EQ(pt_timers_move(NULL, &ts), -EINVAL);
    CHECK_EQ(pt_timers_move(&ts, NULL), -EINVAL);
    CHECK_EQ(pt_timers_verify(NULL, true), -EINVAL);
    CHECK_EQ(pt_timers_destroy(NULL), -EINVAL);
    CHECK_EQ(pt_timers_len(NULL), 0);
    CHECK_EQ(pt_timers_next(NULL), 0);
    CHECK_STATUS(&t, PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timers_len(&ts), 0);

    /* the same with a pending timer: it stays where it was */
    CHECK_EQ(pt_timer_start(&ts, &t, 1000, 0), 0);
    CHECK_EQ(pt_timer_reset(NULL, &t, 9), -EINVAL);
    CHECK_EQ(pt_timer_modify(NULL, &t, 9, 0, count_cb, &n, 0), -EINVAL);
    CHECK_STATUS(&t, PT_TIMER_WAITING);
    CHECK_EQ(t.when, 1000);
    CHECK_EQ(pt_timers_check(&ts, 1000, true, NULL), 1);
    CHECK_EQ(n, 1);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

void test_negative_period_returns_einval_and_changes_nothing(void)
{
    pt_timers ts;
    pt_timer t[2];
    int n = 0, m = 0;
    counting_timers(&ts, t, 2, &n);
    CHECK_EQ(pt_timer_start(&ts, &t[0], 1000, -1), -EINVAL);
    CHECK_STATUS(&t[0], PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timers_len(&ts), 0);
    CHECK_EQ(pt_timer_modify(&ts, &t[0], 1000, -5, count_cb, &m, 3), -EINVAL);
    CHECK_STATUS(&t[0], PT_TIMER_NOSTATUS);
    CHECK_EQ(pt_timers_len(&ts), 0);

    CHECK_EQ(pt_timer_start(&ts, &t[1], 2000, 0), 0);
    CHECK_EQ(pt_timer_modify(&ts, &t[1], 500, INT64_MIN, count_cb, &m, 3), -EINVAL);
    CHECK_STATUS(&t[1], PT_TIMER_WAITING);
    CHECK_EQ(t[1].when, 2000);
    CHECK_EQ(t[1].period, 0);
    CHECK(t[1].arg == &n);
    CHECK_EQ(pt_timers_check(&ts, 1999, true, NULL), 0);
    CHECK_EQ(pt_timers_check(&ts, 2000, true, NULL), 1);
    CHECK_EQ(n, 1);
    CHECK_EQ(m, 0);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

void test_uninitialised_timer_returns_einval(void)
{
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    pt_timer z;
    memset(&z, 0, sizeof z);
    CHECK_EQ(pt_timer_start(&ts, &z, 1000, 0), -EINVAL);
    CHECK_EQ(pt_timer_reset(&ts, &z, 1000), -EINVAL);
    CHECK_EQ(pt_timer_modify(&ts, &z, 1000, 0, count_cb, NULL, 0), -EINVAL);
    CHECK_EQ(pt_timer_stop(&z), -EINVAL);
    CHECK_EQ(pt_timer_stop_sync(&z), -EINVAL);
    CHECK_EQ(pt_timers_len(&ts), 0);
    CHECK_EQ(atomic_load(&z.state), 0); /* untouched */
    CHECK_EQ(pt_timers_destroy(&ts), 0);
}

void test_destroyed_or_uninitialised_heap_returns_einval(void)
{
    pt_timers ts, zero;
    memset(&zero, 0, sizeof zero);
    pt_timers_init(&ts, NULL, NULL);
    CHECK_EQ(pt_timers_destroy(&ts), 0);
    pt_timers *bad[] = {&ts, &zero};
    int n = 0;
    pt_timer t;
    pt_timer_init(&t, count_cb, &n);
    pt_timers good;
    pt_timers_init(&good, NULL, NULL);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(pt_timers_destroy(bad[i]), -EINVAL);
        CHECK_EQ(pt_timer_start(bad[i], &t, 1000, 0), -EINVAL);
        CHECK_EQ(pt_timer_reset(bad[i], &t, 1000), -EINVAL);
        CHECK_EQ(pt_timer_modify(bad[i], &t, 1000, 0, count_cb, &n, 0), -EINVAL);
        CHECK_EQ(pt_timers_check(bad[i], 1000, true, NULL), -EINVAL);
        CHECK_EQ(pt_timers_move(&good, bad[i]), -EINVAL);
        CHECK_EQ(pt_timers_move(bad[i], &good), -EINVAL);
        CHECK_EQ(pt_timers_verify(bad[i], true), -EINVAL);
        CHECK_EQ(pt_timers_len(bad[i]), 0);
        CHECK_EQ(pt_timers_next(bad[i]), 0);
        CHECK_STATUS(&t, PT_TIMER_NOSTATUS);
    }
    CHECK_EQ(n, 0);
    CHECK_EQ(pt_timers_destroy(&good), 0);
}

void test_destroy_of_heap_with_pending_timer_returns_ebusy_and_timer_still_fires(void)
{
    pt_timers ts;
    pt_timers_init(&ts, NULL, NULL);
    int n = 0;
    pt_timer live, ticker, stopped;
    pt_timer_init(&live, count_cb, &n);
    pt_timer_init(&ticker, count_cb, &n);
    pt_timer_init(&stopped, count_cb, &n);
    CHECK_EQ(pt_timer_start(&ts, &live, 2000, 0), 0);
    CHECK_EQ(pt_timer_start(&ts, &stopped, 1000, 0), 0);
    CHECK_EQ(pt_timer_stop(&stopped), 1);
    CHECK_EQ(pt_timers_destroy(&ts), -EBUSY);
    CHECK_STATUS(&live, PT_TIMER_WAITING);
    CHECK_VERIFIED(&ts, true);
    CHECK_EQ(pt_timers_check(&ts, 2000, true, NULL), 1);
    CHECK_EQ(n, 1);
    /* a ticker is live too, and a modified one keeps its new time */
    CHECK_EQ(pt_timer_start(&ts, &ticker, 3000, 100), 0);
    CHECK_EQ(pt_timer_reset(&ts, &ticker, 2500), 1);
    CHECK_EQ(pt_timers_destroy(&ts), -EBUSY);
    CHECK_EQ(pt_timers_check(&ts, 2500, true, NULL), 1);
    CHECK_EQ(n, 2);
    CHECK_EQ(pt_timer_stop(&ticker), 1);
    /* only stopped timers left: destroy unlinks them and succeeds */
    CHECK_EQ(pt_timers_destroy(&ts), 0);
    CHECK_STATUS(&ticker, PT_TIMER_REMOVED);
    CHECK_STATUS(&stopped, PT_TIMER_REMOVED);
    CHECK(heap_of(&ticker) == NULL);
    CHECK_EQ(pt_timer_stop_sync(&ticker), 0);
}
