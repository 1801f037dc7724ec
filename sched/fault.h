/* A G's stack overflow onto a faulting guard (a guard region or a
 * PROT_NONE page) told as a canary's is: a message naming the G, then
 * abort, rather than a bare SIGSEGV (Go's "stack overflow" with the
 * goroutine's id). fault.c. */
#ifndef PT_SCHED_FAULT_H
#define PT_SCHED_FAULT_H

/* Installs the process's SIGSEGV and SIGBUS handler, once; the handlers
 * installed before it get every fault that is not a G's overflow. Best
 * effort: 0, or the negative errno sigaction gave (then faults stay the
 * kernel's). Not under ThreadSanitizer or AddressSanitizer, which handle
 * faults themselves. */
int pt__fault_install(void);

/* The calling M's signal stack, which the handler runs on (the G's stack
 * is spent), made and removed by the M around its life. */
void pt__fault_stack_on(void);
void pt__fault_stack_off(void);

#endif
