/* What belongs to the calling thread: its M, its errno, its random
 * numbers. A leaf: it calls nothing of the scheduler's. */
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "base/rng.h"
#include "sched/internal.h"
#include "sched/self.h"

/* The calling thread's M. Initial-exec: an offset from the thread
 * pointer, where the shared library's default (global-dynamic) model
 * calls __tls_get_addr on every read, and this is read several times a
 * switch. The price: the library takes 8 bytes of the static TLS that
 * glibc reserves, so a late dlopen fails only if that reserve is gone. */
static _Thread_local struct pt__m *tls_m __attribute__((tls_model("initial-exec")));

/* A G that resumed on another M must read the variable on that M's
 * thread: see PT__TLS_READER (sched/fiber.h). */
PT__TLS_READER struct pt__m *pt__cur_m(void)
{
    return tls_m;
}

void pt__set_cur_m(struct pt__m *m)
{
    tls_m = m;
}

PT__TLS_READER int pt__errno(void)
{
    return errno;
}

/* On an M, its generator (only its own thread touches it); elsewhere one
 * per thread, seeded from its address and the clock. */
uint32_t pt__fastrand(void)
{
    static _Thread_local uint64_t x;
    struct pt__m *m = pt__cur_m();
    uint64_t *r = m ? &m->rng : &x;
    if (*r == 0)
        *r = (uint64_t)(uintptr_t)&x ^ (uint64_t)pt_nanotime() ^ 0x9e3779b97f4a7c15ull;
    return (uint32_t)(pt__xorshift64(r) >> 16);
}

void pt__backoff(void)
{
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
}
