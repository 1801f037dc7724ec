/* The TSC line (tsc.h): whether the counter may be used, the first
 * calibration, and the re-anchoring that keeps the line on
 * CLOCK_MONOTONIC.
 *
 * Why it can be trusted, and what it guarantees:
 *
 * - Invariant. CPUID.80000007H:EDX[8] says the counter ticks at one rate
 *   in every P-, C- and T-state (Linux's constant_tsc + nonstop_tsc). A
 *   hypervisor that cannot promise this does not set the bit, and the
 *   clock stays on CLOCK_MONOTONIC.
 * - In step across cores. No user-space test can bound per-core skew as
 *   well as the kernel's own (the boot-time sync check of every core
 *   against the first, the TSC_ADJUST checks, the clocksource watchdog
 *   that demotes a TSC it catches drifting). So the counter is used only
 *   where the kernel itself times CLOCK_MONOTONIC with it (its current
 *   clocksource is "tsc"): whatever skew is left, CLOCK_MONOTONIC shows
 *   too. On top of that a read never maps a counter value from before
 *   the line's anchor (a core a hair behind the one that anchored it)
 *   below the anchor's time: it clamps to the anchor.
 * - Never backwards, across threads. The read is ordered after earlier
 *   loads (lfence; rdtsc), so a read that happens after another, through
 *   any synchronisation, reads a later counter. A re-anchor keeps the line
 *   continuous: the new line starts where the old one is at a counter
 *   read *after* the sequence count went odd, and every read the old line
 *   still answered read its counter before that (tsc.h's second look at
 *   the count). Only the slope changes, and it stays positive.
 * - On CLOCK_MONOTONIC. Every PT__TSC_REFRESH_NS the first reader to find
 *   the line older re-anchors it: it reads a (counter, clock_gettime) pair
 *   outside the seqlock, then, inside (a few instructions), measures how
 *   far the line has wandered from CLOCK_MONOTONIC and sets a slope that
 *   closes the gap by the next re-anchor. The rate is measured over up to
 *   a minute of pairs (NTP's frequency changes show within a minute) and
 *   corrected by at most 5 %; a line found behind jumps forward at once,
 *   one that got ahead is slowed by at most 5 % until it is back (it
 *   cannot jump back).
 *
 * What each read costs: bench/journal/2026-11-25-tsc-clock-and-timerthread-reclaim.md,
 * "What a clock read costs".
 */
#include "base/tsc.h"
#include "base/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef PT__HAVE_TSC
#include <cpuid.h>
#endif

_Alignas(64) struct pt__tsc_line pt__tsc;
void (*pt__tsc_in_write)(void);

static pt_nanos mono_read(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (pt_nanos)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#ifdef PT__HAVE_TSC

/* The far end of the rate's baseline: a (counter, ns) pair up to
 * PT__ORIGIN_MAX_NS old. Touched only by the thread that holds the
 * sequence count odd (or by the calibration, before publication). */
#define PT__ORIGIN_MAX_NS 60000000000LL
static uint64_t origin_tsc;
static int64_t origin_ns;

/* A clock_gettime bracketed by two counter reads more than this apart
 * was interrupted: its pairing is unknown. Generous: far above a clean
 * pair (bench/journal/2026-11-25-tsc-clock-and-timerthread-reclaim.md,
 * "What a clock read costs"). */
#define PT__PAIR_MAX_CYCLES 16384

/* A (counter, CLOCK_MONOTONIC) pair: the narrowest of a few tries, the
 * counter taken midway. 0, or -EAGAIN if every try was interrupted. */
static int read_pair(uint64_t *tsc, int64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 4; i++) {
        uint64_t t0 = pt__rdtsc_ordered();
        int64_t n = mono_read();
        uint64_t t1 = pt__rdtsc_ordered();
        if (t1 - t0 < best) {
            best = t1 - t0;
            *tsc = t0 + best / 2;
            *ns = n;
        }
    }
    return best <= PT__PAIR_MAX_CYCLES ? 0 : -EAGAIN;
}

/* ns per cycle in 32.32 fixed point over the baseline from the origin. */
static uint64_t rate(uint64_t tsc, int64_t ns)
{
    return (uint64_t)(((unsigned __int128)(uint64_t)(ns - origin_ns) << 32) / (tsc - origin_tsc));
}

/* Whether the kernel times CLOCK_MONOTONIC with the TSC (see the top). */
static int kernel_uses_tsc(void)
{
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                  O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0; /* cannot tell: do not trust the counter */
    char buf[32] = "";
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n >= 3 && strncmp(buf, "tsc", 3) == 0 && (n == 3 || buf[3] == '\n');
}

int pt__tsc_probe(int forced)
{
    if (forced)
        return 0;
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return -ENOTSUP;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    if (!(d & (1u << 8))) /* invariant TSC */
        return -ENOTSUP;
    return kernel_uses_tsc() ? 0 : -ENODEV;
}

int pt__tsc_calibrate(void)
{
    uint64_t t0, t1;
    int64_t n0, n1;
    /* 0.5 ms: long enough that the two pairs' reading error makes the
     * first slope off by well under a microsecond at the first re-anchor
     * 10 ms later, which measures the rate over 10 ms and steers the
     * error out; a longer first calibration would stall the first
     * pt_nanotime of every process for longer. */
    if (read_pair(&t0, &n0) != 0)
        return -EAGAIN;
    while (mono_read() < n0 + 500000)
        ;
    if (read_pair(&t1, &n1) != 0 || t1 <= t0 || n1 <= n0)
        return -EAGAIN;
    origin_tsc = t0;
    origin_ns = n0;
    uint64_t m = rate(t1, n1);
    if (m == 0)
        return -EAGAIN;
    pt__tsc.refresh_cycles = (uint64_t)(((unsigned __int128)PT__TSC_REFRESH_NS << 32) / m);
    atomic_store_explicit(&pt__tsc.base_tsc, t1, memory_order_relaxed);
    atomic_store_explicit(&pt__tsc.base_ns, n1, memory_order_relaxed);
    atomic_store_explicit(&pt__tsc.mult, m, memory_order_relaxed);
    /* release: with clock.c's release store of the state, publishes the
     * words above and refresh_cycles to the first readers */
    atomic_store_explicit(&pt__tsc.seq, 0, memory_order_release);
    return 0;
}

/* The old line (bt, bn, m) at counter t, with the counter clamped to the
 * anchor, in 128 bits (d may be past the 64-bit product's range). */
static int64_t line_at(uint64_t t, uint64_t bt, int64_t bn, uint64_t m)
{
    if ((int64_t)(t - bt) <= 0)
        return bn;
    return bn + (int64_t)(((unsigned __int128)(t - bt) * m) >> 32);
}

/* Re-anchor, holding the count odd (seq + 1): the pair (ta, na) was read
 * just before. Ends the write with the release store of seq + 2. */
static pt_nanos reanchor(uint32_t seq, uint64_t ta, int64_t na, uint64_t bt, int64_t bn, uint64_t m)
{
    /* After the CAS that made the count odd (a full barrier) and ordered
     * by the lfence: every read still answered by the old line read its
     * counter before tc, so the new line, which starts at the old line's
     * value at tc, is above all of them. */
    uint64_t tc = pt__rdtsc_ordered();
    int64_t start = line_at(tc, bt, bn, m);
    if (pt__tsc_in_write)
        pt__tsc_in_write();

    uint64_t f = rate(ta, na);
    int64_t mono_tc = na + (int64_t)(((__int128)(int64_t)(tc - ta) * (__int128)f) >> 32);
    int64_t err = start - mono_tc; /* > 0: the line runs ahead of CLOCK_MONOTONIC */
    const int64_t h = PT__TSC_REFRESH_NS, limit = PT__TSC_REFRESH_NS / 20;
    /* Behind: forward is always allowed, so step onto CLOCK_MONOTONIC at
     * once (a slowed line read again only after a long gap falls behind by
     * up to 5 % of the gap; this puts it back at that read). */
    if (err < 0) {
        start = mono_tc;
        err = 0;
    } else if (err > limit) {
        err = limit; /* far ahead: slow down by 5 % until caught up */
    }
    /* The slope that meets CLOCK_MONOTONIC one refresh period from now. */
    uint64_t nm = (uint64_t)(((unsigned __int128)f * (uint64_t)(h - err)) / (uint64_t)h);
    if (nm == 0)
        nm = 1; /* never flat, never backwards */
    if (na - origin_ns > PT__ORIGIN_MAX_NS) {
        origin_tsc = ta;
        origin_ns = na;
    }
    /* release: a reader whose acquire load sees one of these also sees
     * the CAS that made the count odd, and reads again (tsc.h) */
    atomic_store_explicit(&pt__tsc.base_tsc, tc, memory_order_release);
    atomic_store_explicit(&pt__tsc.base_ns, start, memory_order_release);
    atomic_store_explicit(&pt__tsc.mult, nm, memory_order_release);
    /* release: pairs with the readers' acquire load of seq (tsc.h) */
    atomic_store_explicit(&pt__tsc.seq, seq + 2, memory_order_release);
    return start;
}

void pt__tsc_wait_even(void)
{
    /* acquire: as the reader's first look (tsc.h), which reads again */
    unsigned waits = 0;
    for (int i = 0; atomic_load_explicit(&pt__tsc.seq, memory_order_acquire) & 1; i++) {
        if (i < 64)
            __builtin_ia32_pause();
        else
            pt__wait_other(&waits);
    }
}

pt_nanos pt__tsc_slow(uint64_t t, uint32_t seq, uint64_t bt, int64_t bn, uint64_t m)
{
    if ((int64_t)(t - bt) < 0)
        return bn; /* this core's counter is a little behind the anchor's */
    uint64_t ta;
    int64_t na;
    if (read_pair(&ta, &na) == 0) {
        /* Every signal is held off this thread while it holds the count
         * odd, since every reader waits for it: a handler here that read
         * the clock would wait for itself, and one that switched the
         * thread's stack away (the scheduler's preemption) would leave the
         * count odd until something resumed it, with every reader -- the
         * Ms that would resume it among them -- spinning. Two sigprocmask
         * calls every refresh period. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        uint32_t expect = seq;
        pt_nanos r = -1; /* another reader is re-anchoring: read the new line */
        /* acq_rel: the winner is the only writer until its release store
         * of seq + 2; acquire orders it after the previous re-anchor's
         * writes (the origin included). */
        if (atomic_compare_exchange_strong_explicit(&pt__tsc.seq, &expect, seq + 1,
                                                    memory_order_acq_rel, memory_order_relaxed))
            r = reanchor(seq, ta, na, bt, bn, m);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return r;
    }
    /* Interrupted while pairing: answer from the line as it is (valid for
     * t: the caller's second look at the count said so); a later read
     * re-anchors. */
    return line_at(t, bt, bn, m);
}

#else /* not x86-64: no counter; clock.c never asks for the line */

int pt__tsc_probe(int forced)
{
    (void)forced;
    return -ENOSYS;
}

int pt__tsc_calibrate(void)
{
    return -ENOSYS;
}

pt_nanos pt__tsc_slow(uint64_t t, uint32_t seq, uint64_t bt, int64_t bn, uint64_t m)
{
    (void)t, (void)seq, (void)bt, (void)bn, (void)m;
    return mono_read();
}

void pt__tsc_wait_even(void)
{
}

#endif
