/* The scheduler's crash reports: internal corruption ends the process with
 * a message naming the G, its state and the operation. A leaf: it calls
 * nothing of the scheduler's. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sched/crash.h"
#include "sched/internal.h"

static const char *g_status_name(uint32_t s)
{
    static const char *const names[] = {"Idle", "Runnable", "Running", "Waiting", "Dead"};
    return s < sizeof names / sizeof names[0] ? names[s] : "(invalid)";
}

_Noreturn void pt__sched_bad(const pt_g *g, const char *op)
{
    uint32_t s = atomic_load_explicit(&((pt_g *)g)->status, memory_order_relaxed);
    fprintf(stderr, "ptimer sched: corrupt G %p (id %llu): status %s (%u), action %u, in %s\n",
            (const void *)g, (unsigned long long)g->id, g_status_name(s), s, g->action, op);
    abort();
}

/* Appends s to the buffer at *at (no further than end). */
static void put_str(char **at, char *end, const char *s)
{
    while (*s && *at < end)
        *(*at)++ = *s++;
}

static void put_num(char **at, char *end, uint64_t v, unsigned base)
{
    char d[24];
    int n = 0;
    do {
        d[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    while (n > 0 && *at < end)
        *(*at)++ = d[--n];
}

_Noreturn void pt__sched_overflow(const pt_g *g, const char *op)
{
    /* The stack below is not this G's: stdio's frames would run on into
     * whatever lies there. A static buffer, as the process ends here. */
    static char buf[256];
    char *at = buf, *end = buf + sizeof buf;
    put_str(&at, end, "ptimer sched: corrupt G 0x");
    put_num(&at, end, (uint64_t)(uintptr_t)g, 16);
    put_str(&at, end, " (id ");
    if (g)
        put_num(&at, end, g->id, 10);
    else
        put_str(&at, end, "unknown: none is at its stack's top");
    put_str(&at, end, "): in ");
    put_str(&at, end, op);
    put_str(&at, end, "\n");
    ssize_t w = write(2, buf, (size_t)(at - buf));
    (void)w;
    abort();
}
