/* A fault on a G's stack guard, reported as an overflow of that G.
 *
 * The handler runs on the M's own signal stack (sigaltstack, SA_ONSTACK):
 * the G's stack is spent, and the kernel could not deliver the signal
 * there. It asks only what is async-signal-safe to ask: the calling
 * thread's M (an initial-exec TLS read), the G it runs (an atomic load),
 * and that G's stack bounds, written before the G first ran. A fault
 * address in the page below the running G's stack is that G's overflow:
 * pt__sched_overflow writes a line naming it and aborts. Anything else
 * (a fault off an M, or elsewhere in memory) goes to the handler
 * installed before this one; where that is the default, the default is
 * put back and the faulting instruction runs again to die by it, so the
 * process ends by the signal as it would have without us. */
#define _GNU_SOURCE
#include "sched/fault.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sched/internal.h"
#include "sched/sanitizer.h"

#if defined(PT__TSAN) || defined(PT__ASAN)
#define FAULT_HANDLER 0 /* the sanitizers' own handlers report faults */
#else
#define FAULT_HANDLER 1
#endif

static struct sigaction previous_segv, previous_bus;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_error;

/* A signal stack: what the handler's frames and pt__sched_overflow's
 * take, with room for a chained handler. */
#define FAULT_STACK ((size_t)64 << 10)
static _Thread_local void *fault_stack;

static void chain(const struct sigaction *prev, int sig, siginfo_t *si, void *uc)
{
    if (prev->sa_flags & SA_SIGINFO) {
        if (prev->sa_sigaction) {
            prev->sa_sigaction(sig, si, uc);
            return;
        }
    } else if (prev->sa_handler == SIG_IGN) {
        /* a fault cannot be ignored: the kernel kills on its return */
    } else if (prev->sa_handler != SIG_DFL) {
        prev->sa_handler(sig);
        return;
    }
    /* the default: put it back, and the instruction faults again */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    struct pt__m *m = pt__cur_m();
    pt_g *g = m ? atomic_load_explicit(&m->curg, memory_order_relaxed) : NULL;
    if (g && si) {
        uintptr_t a = (uintptr_t)si->si_addr, lo = (uintptr_t)g->stack.lo;
        uintptr_t guard = (uintptr_t)(g->s->stacks.slot - g->s->stacks.size);
        if (g->stack.kind != PT__STACK_CANARY && a < lo && a >= lo - guard)
            pt__sched_overflow(g, "a fault: the G overflowed its stack into the guard below it");
    }
    chain(sig == SIGBUS ? &previous_bus : &previous_segv, sig, si, uc);
}

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &previous_segv) != 0 || sigaction(SIGBUS, &sa, &previous_bus) != 0)
        install_error = -errno;
}

int pt__fault_install(void)
{
    if (!FAULT_HANDLER)
        return 0;
    pthread_once(&install_once, install);
    return install_error;
}

void pt__fault_stack_on(void)
{
    if (!FAULT_HANDLER)
        return;
    void *p = mmap(NULL, FAULT_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return; /* no signal stack: an overflow dies by the bare signal */
    stack_t ss = {.ss_sp = p, .ss_size = FAULT_STACK, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(p, FAULT_STACK);
        return;
    }
    fault_stack = p;
}

void pt__fault_stack_off(void)
{
    if (!fault_stack)
        return;
    stack_t ss = {.ss_flags = SS_DISABLE};
    sigaltstack(&ss, NULL);
    munmap(fault_stack, FAULT_STACK);
    fault_stack = NULL;
}
