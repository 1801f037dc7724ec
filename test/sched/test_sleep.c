/* Sleeps and timers inside the scheduler: never early, never lost, in both
 * timer modes; the netpoller's sleep broken by a new earliest timer; a
 * busy P's timers run by an idle P or by the monitor; set_procs moving
 * timers. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sched/internal.h"
#include "util.h"

/* ---- never early --------------------------------------------------------- */

static atomic_long early, woke;

static void sleeper(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
    for (int i = 0; i < 5; i++) {
        pt_nanos d = (pt_nanos)(pt__xorshift64(&x) % (2 * MS));
        pt_nanos t0 = pt_nanotime();
        CHECK_EQ(pt_sleep(d), 0);
        if (pt_nanotime() < t0 + d)
            atomic_fetch_add(&early, 1);
    }
    atomic_fetch_add(&woke, 1);
}

static void never_early(enum pt_timer_mode mode)
{
    atomic_store(&early, 0);
    atomic_store(&woke, 0);
    pt_sched *s = make_sched(2, mode);
    int n = (int)SCALE(1000);
    for (int i = 0; i < n; i++)
        CHECK_EQ(pt_go(s, sleeper, (void *)(intptr_t)(i + 1)), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    CHECK_EQ(atomic_load(&woke), n);
    CHECK_EQ(atomic_load(&early), 0);
    pt_sched_stats st = stats_of(s);
    if (per_p_heaps(mode))
        CHECK(st.timers_run_owner + st.timers_run_stolen + st.timers_run_sysmon > 0);
    else
        CHECK_EQ(st.timers_run_owner + st.timers_run_stolen + st.timers_run_sysmon, 0);
    CHECK_EQ(pt_sched_destroy(s), 0);
}

void test_sleep_is_never_early(int mode)
{
    never_early((enum pt_timer_mode)mode);
}

/* ---- ten thousand sleepers ------------------------------------------------ */

static void one_sleep(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg * 0x2545f4914f6cdd1dull + 7;
    pt_nanos d = (pt_nanos)(pt__xorshift64(&x) % (20 * MS));
    pt_nanos t0 = pt_nanotime();
    CHECK_EQ(pt_sleep(d), 0);
    if (pt_nanotime() < t0 + d)
        atomic_fetch_add(&early, 1);
    atomic_fetch_add(&woke, 1);
}

static void many_sleepers(enum pt_timer_mode mode)
{
    atomic_store(&early, 0);
    atomic_store(&woke, 0);
    pt_sched *s = make_sched(2, mode);
    int n = (int)SCALE(10000);
    for (int i = 0; i < n; i++)
        CHECK_EQ(pt_go(s, one_sleep, (void *)(intptr_t)(i + 1)), 0);
    CHECK_EQ(pt_sched_wait(s), 0);
    print_stats(mode_name(mode), s);
    CHECK_EQ(pt_sched_destroy(s), 0);
    CHECK_EQ(atomic_load(&woke), n);
    CHECK_EQ(atomic_load(&early), 0);
}

void test_ten_thousand_sleepers_all_wake(int mode)
{
    many_sleepers((enum pt_timer_mode)mode);
}

void test_sleep_outside_a_g_sleeps_the_thread(void)
{
    pt_nanos t0 = pt_nanotime();
    CHECK_EQ(pt_sleep(2 * MS), 0);
    CHECK(pt_nanotime() >= t0 + 2 * MS);
    CHECK_EQ(pt_sleep(-5), 0);
    CHECK_EQ(pt_sleep_until(t0), 0); /* in the past: at once */
}

/* ---- the netpoller's sleep ------------------------------------------------- */

static atomic_llong short_woke_at, long_deadline;

static void long_sleeper(void *arg)
{
    (void)arg;
    pt_nanos until = pt_nanotime() + 3 * SEC;
    atomic_store(&long_deadline, until);
    CHECK_EQ(pt_sleep_until(until), 0);
}

static void short_sleeper(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_sleep(10 * MS), 0);
    atomic_store(&short_woke_at, pt_nanotime());
}

/* Whether one of the scheduler's Ms sleeps in the kernel's poll wait
 * right now, as the kernel tells (/proc's wchan): 1 yes, 0 no, -1 when
 * this kernel does not say (wchan hidden). */
static int an_m_sleeps_in_the_netpoller(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int told = 0, found = 0;
    struct dirent *e;
    while ((e = readdir(d)) && !found) {
        char path[300], comm[32] = "", wchan[64] = "";
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(comm, sizeof comm, f))
                comm[0] = 0;
            fclose(f);
        }
        if (strncmp(comm, "pt_sched_m", 10) != 0)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/wchan", e->d_name);
        if ((f = fopen(path, "r"))) {
            if (!fgets(wchan, sizeof wchan, f))
                wchan[0] = 0;
            fclose(f);
        }
        if (wchan[0] && strcmp(wchan, "0") != 0)
            told = 1;
        found = strcmp(wchan, "do_epoll_wait") == 0 || strcmp(wchan, "ep_poll") == 0 ||
                strcmp(wchan, "io_cqring_wait") == 0;
    }
    closedir(d);
    return found ? 1 : told ? 0 : -1;
}

/* Two Ps: one M sleeps in the netpoller until the long sleeper's time,
 * the other is parked (with no timeout: only the poller waits for
 * timers). The short sleeper, armed later on the other P's heap, is the
 * new earliest timer: its wake function must break the netpoller's
 * sleep, so it wakes long before the long sleeper does. The break is
 * counted when the kernel shows an M inside the poll wait before the
 * short sleeper starts (the counts alone say an M was idle once, not
 * that it still is: one that had just left sees the new timer when it
 * next idles, with no break). */
void test_new_earliest_timer_breaks_the_netpoll_sleep(void)
{
    atomic_store(&short_woke_at, 0);
    pt_sched *s = make_sched(2, PT_TIMERS_PER_P);
    CHECK_EQ(pt_go(s, long_sleeper, NULL), 0);
    /* both Ms idle: one in the netpoller, one parked */
    WAIT_FOR(atomic_load(&long_deadline) != 0 && stats_of(s).netpoll_waits >= 1 &&
             stats_of(s).parks >= 1);
    int in_poll;
    WAIT_FOR((in_poll = an_m_sleeps_in_the_netpoller()) != 0);
    uint64_t breaks = stats_of(s).netpoll_breaks;
    CHECK_EQ(pt_go(s, short_sleeper, NULL), 0);
    WAIT_FOR(atomic_load(&short_woke_at) != 0);
    /* slept through, the netpoller would wake it with the long sleeper,
     * 3 s on */
    CHECK(atomic_load(&short_woke_at) < atomic_load(&long_deadline));
    if (in_poll > 0)
        CHECK(stats_of(s).netpoll_breaks > breaks);
    printf("     the poll wait %s, breaks %llu\n",
           in_poll > 0 ? "seen by the kernel" : "not shown by this kernel (wchan)",
           (unsigned long long)(stats_of(s).netpoll_breaks - breaks));
    finish_sched(s);
}

/* ---- busy Ps ------------------------------------------------------------------ */

static atomic_int sleeper_woke, spinner_stopped_first;
static pt_sched *busy_s;

/* How long a busy P spins at most: the claim is that its 10 ms sleeper
 * wakes while the P is still busy, which a design leaving the timer to
 * that P never does. Long, so that a loaded machine's delays fit in it;
 * the spin ends as soon as the sleeper has woken. */
#define SPIN (3 * SEC)

static void ten_ms_sleeper(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_sleep(10 * MS), 0);
    atomic_store(&sleeper_woke, 1);
}

/* Arms the sleeper's timer on this P (the sleeper runs first: runnext),
 * then keeps the P busy without yielding until the sleeper has woken,
 * which only another P or the monitor can make happen. */
static void spinner(void *arg)
{
    int grow_to = (int)(intptr_t)arg;
    CHECK_EQ(pt_go(NULL, ten_ms_sleeper, NULL), 0);
    pt_yield(); /* the sleeper runs and parks; this G goes to the global queue */
    if (grow_to)
        CHECK_EQ(pt_sched_set_procs(busy_s, grow_to), 0);
    pt_nanos end = pt_nanotime() + SPIN;
    while (!atomic_load(&sleeper_woke) && pt_nanotime() < end)
        ;
    if (!atomic_load(&sleeper_woke))
        atomic_store(&spinner_stopped_first, 1);
}

/* Whether the busy P ran its own timer before its spin began: its M lost
 * the CPU for the whole sleep between the sleeper's park and the
 * spinner's start. Such a round proves nothing and is run again. A design
 * that leaves the timer to its own P runs it only after the spinner has
 * given up (stopped first), and that round counts. */
static bool owner_ran_it_early(void)
{
    return stats_of(busy_s).timers_run_owner > 0 && !atomic_load(&spinner_stopped_first);
}

/* Rounds on a fresh busy_s, each begun by start, until one the owner did
 * not spoil (at most five); busy_s is left that round's. */
static void busy_round(int procs, enum pt_timer_mode mode, void (*start)(void))
{
    for (int round = 0;; round++) {
        CHECK(round < 5);
        atomic_store(&sleeper_woke, 0);
        atomic_store(&spinner_stopped_first, 0);
        busy_s = make_sched(procs, mode);
        start();
        CHECK_EQ(pt_sched_wait(busy_s), 0);
        if (!owner_ran_it_early())
            return;
        CHECK_EQ(pt_sched_destroy(busy_s), 0);
    }
}

static void start_spinner(void)
{
    CHECK_EQ(pt_go(busy_s, spinner, (void *)2), 0);
}

/* One P busy, one idle. Per-P: the idle P's M (the netpoller) runs the
 * busy P's due timer. TimerThread: its thread readies the sleeper onto
 * the global queue, where the idle P finds it. Either way the sleeper
 * wakes while the spinner still spins. */
static void busy_beside_idle(enum pt_timer_mode mode)
{
    busy_round(1, mode, start_spinner);
    CHECK_EQ(atomic_load(&spinner_stopped_first), 0);
    printf("busy P beside an idle one, ");
    print_stats(mode_name(mode), busy_s);
    pt_sched_stats st = stats_of(busy_s);
    if (per_p_heaps(mode))
        CHECK(st.timers_run_stolen + st.timers_run_sysmon >= 1);
    else
        CHECK_EQ(st.timers_run_owner + st.timers_run_stolen + st.timers_run_sysmon, 0);
    CHECK_EQ(pt_sched_destroy(busy_s), 0);
}

void test_busy_p_timer_is_run_by_an_idle_p(void)
{
    busy_beside_idle(PT_TIMERS_PER_P);
}

void test_busy_p_timer_is_run_by_an_idle_p_lheap(void)
{
    busy_beside_idle(PT_TIMERS_LHEAP);
}

void test_busy_p_sleeper_is_readied_by_the_timerthread(void)
{
    busy_beside_idle(PT_TIMERS_TIMERTHREAD);
}

static atomic_int hold;

static void holder(void *arg)
{
    (void)arg;
    while (atomic_load(&hold))
        ;
}

static void spinner_then_release(void *arg)
{
    (void)arg;
    CHECK_EQ(pt_go(NULL, ten_ms_sleeper, NULL), 0);
    pt_yield();
    /* Both Ps busy (the holder has the other): only the monitor can run
     * the overdue timer. Spin until it has (the sleeper is then runnable
     * on the global queue), then let the holder go. */
    pt_nanos end = pt_nanotime() + SPIN;
    pt_sched_stats st;
    while ((st = stats_of(busy_s)).timers_run_sysmon == 0 && st.timers_run_owner == 0 &&
           pt_nanotime() < end)
        ;
    if (st.timers_run_sysmon == 0 && st.timers_run_owner == 0)
        atomic_store(&spinner_stopped_first, 1); /* not while both were busy */
    atomic_store(&hold, 0);
}

static void start_holder_and_spinner(void)
{
    atomic_store(&hold, 1);
    CHECK_EQ(pt_go(busy_s, holder, NULL), 0);
    CHECK_EQ(pt_go(busy_s, spinner_then_release, NULL), 0);
}

static void busy_ps(enum pt_timer_mode mode)
{
    busy_round(2, mode, start_holder_and_spinner);
    CHECK_EQ(atomic_load(&spinner_stopped_first), 0);
    CHECK_EQ(atomic_load(&sleeper_woke), 1);
    print_stats("every P busy", busy_s);
    CHECK(stats_of(busy_s).timers_run_sysmon >= 1);
    CHECK_EQ(pt_sched_destroy(busy_s), 0);
}

void test_busy_ps_timers_are_run_by_sysmon(void)
{
    busy_ps(PT_TIMERS_PER_P);
    busy_ps(PT_TIMERS_LHEAP);
}

/* ---- the monitor's slice ------------------------------------------------------ */

/* Linux's struct sched_attr, first version: the kernel's ABI. */
struct kattr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
};

static bool read_attr(pid_t tid, struct kattr *a)
{
    memset(a, 0, sizeof *a);
    return syscall(SYS_sched_getattr, tid, a, sizeof *a, 0) == 0;
}

/* Whether this kernel takes a custom slice for a normal thread (6.12+;
 * not under every emulator): tried on a thread made for it. */
static void *probe_slice(void *arg)
{
    struct kattr a;
    bool *ok = arg;
    if (read_attr(0, &a) && a.policy == SCHED_OTHER) {
        a.size = sizeof a;
        a.runtime = PT__SYSMON_SLICE_NS;
        *ok = syscall(SYS_sched_setattr, 0, &a, 0) == 0 && read_attr(0, &a) &&
              a.runtime == PT__SYSMON_SLICE_NS;
    }
    return NULL;
}

/* The monitor's thread by its name; 0 while it has none yet. */
static pid_t find_sysmon(void)
{
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL);
    pid_t found = 0;
    for (struct dirent *e; !found && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[32] = {0};
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f && fgets(comm, sizeof comm, f) && strcmp(comm, "pt_sysmon\n") == 0)
            found = (pid_t)atoi(e->d_name);
        if (f)
            fclose(f);
    }
    closedir(d);
    return found;
}

/* The monitor wakes to run a busy P's timers, and its wake-up must not
 * wait for the G computing on the core it needs: it asks for the
 * kernel's shortest slice, keeping its policy and nice value. */
void test_sysmon_asks_for_a_short_slice(void)
{
    bool supported = false;
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, probe_slice, &supported), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    struct kattr mine;
    bool readable = read_attr(0, &mine);

    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    pid_t tid;
    WAIT_FOR((tid = find_sysmon()) != 0);
    struct kattr a;
    if (supported) {
        /* named after asking: a nap or two for the name to appear first */
        WAIT_FOR(read_attr(tid, &a) && a.runtime == PT__SYSMON_SLICE_NS);
        CHECK_EQ(a.policy, SCHED_OTHER);
        if (readable)
            CHECK_EQ(a.nice, mine.nice);
    }
    printf("monitor thread %d, custom slice %s\n", (int)tid,
           supported ? "set" : "not supported here");
    finish_sched(s);
}

/* The monitor's real-time priority: SCHED_FIFO at the priority asked for
 * where the process may (root, CAP_SYS_NICE, RLIMIT_RTPRIO), -EPERM and
 * nothing changed where not; back to a normal thread with its nice value
 * (and its short slice where the kernel takes one) at 0. */
void test_monitor_priority_is_real_time_or_refused(void)
{
    bool supported = false;
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, probe_slice, &supported), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    pt_sched *s = make_sched(1, PT_TIMERS_PER_P);
    pid_t tid;
    WAIT_FOR((tid = find_sysmon()) != 0);
    struct kattr before, a;
    WAIT_FOR(read_attr(tid, &before) && (!supported || before.runtime == PT__SYSMON_SLICE_NS));
    int r = pt_sched_set_monitor_priority(s, 3);
    CHECK(read_attr(tid, &a));
    if (r == 0) {
        CHECK_EQ(a.policy, SCHED_FIFO);
        CHECK_EQ(a.priority, 3);
        CHECK_EQ(pt_sched_set_monitor_priority(s, 0), 0);
        CHECK(read_attr(tid, &a));
        CHECK_EQ(a.policy, SCHED_OTHER);
        CHECK_EQ(a.nice, before.nice);
        if (supported)
            CHECK_EQ(a.runtime, PT__SYSMON_SLICE_NS);
    } else {
        CHECK_EQ(r, -EPERM);
        CHECK_EQ(a.policy, before.policy);
        CHECK_EQ(a.priority, before.priority);
    }
    printf("monitor priority 3: %s\n", r == 0 ? "set, and back" : "not permitted here");
    finish_sched(s);
}

/* ---- set_procs ------------------------------------------------------------- */

#define PROCS_WAVE 1000 /* sleepers in each of two waves */
static atomic_int wakes[2 * PROCS_WAVE], woken;

static void numbered_sleeper(void *arg)
{
    int i = (int)(intptr_t)arg;
    CHECK_EQ(pt_sleep(20 * MS + (i % 50) * MS), 0);
    CHECK_EQ(atomic_fetch_add(&wakes[i], 1), 0); /* exactly once */
    atomic_fetch_add(&woken, 1);
}

/* First wave: 1000 Gs asleep on 4 Ps, then down to 1. No P comes back
 * until every one has woken, so the removed Ps' timers must have moved to
 * the P left and fired there (a timer left behind would never fire, and
 * the wait below would end the test). Second wave: up to 4 while they
 * sleep, then down to 2. Every sleeper wakes exactly once. */
static void procs_down_and_up(enum pt_timer_mode mode)
{
    for (int i = 0; i < 2 * PROCS_WAVE; i++)
        atomic_store(&wakes[i], 0);
    atomic_store(&woken, 0);
    pt_sched *s = make_sched(4, mode);
    for (int i = 0; i < PROCS_WAVE; i++)
        CHECK_EQ(pt_go(s, numbered_sleeper, (void *)(intptr_t)i), 0);
    CHECK_EQ(pt_sched_procs(s), 4);
    CHECK_EQ(pt_sched_set_procs(s, 1), 0);
    CHECK_EQ(pt_sched_procs(s), 1);
    WAIT_FOR(atomic_load(&woken) == PROCS_WAVE);
    CHECK_EQ(pt_sched_procs(s), 1);
    CHECK_EQ(pt_sched_set_procs(s, 4), 0);
    for (int i = PROCS_WAVE; i < 2 * PROCS_WAVE; i++)
        CHECK_EQ(pt_go(s, numbered_sleeper, (void *)(intptr_t)i), 0);
    nap_ms();
    CHECK_EQ(pt_sched_set_procs(s, 2), 0);
    finish_sched(s);
    for (int i = 0; i < 2 * PROCS_WAVE; i++)
        CHECK_EQ(atomic_load(&wakes[i]), 1);
}

/* Both per-P families: a removed P's heap moves (pt_timers_move,
 * pt_lheap_move). */
void test_set_procs_down_and_up_wakes_every_sleeper_once(void)
{
    procs_down_and_up(PT_TIMERS_PER_P);
    procs_down_and_up(PT_TIMERS_LHEAP);
}
