/* The README's usage example: one P's timers, a one-shot and a ticker,
 * driven by a check loop as a scheduler would drive them. */
#include <ptimer/ptimer.h>
#include <stdio.h>
#include <stdlib.h>

static int fired, ticks;

static void once(void *arg, uintptr_t seq)
{
    printf("%s fired (seq %lu)\n", (const char *)arg, (unsigned long)seq);
    fired++;
}

static void tick(void *arg, uintptr_t seq)
{
    (void)arg;
    (void)seq;
    ticks++;
}

int main(void)
{
    pt_timers p;                       /* one P's heap */
    if (pt_timers_init(&p, NULL, NULL) != 0) /* no poller to wake */
        return EXIT_FAILURE;

    pt_timer t, tk;
    pt_timer_init(&t, once, "deadline");
    pt_timer_init(&tk, tick, NULL);

    pt_nanos now = pt_nanotime();
    pt_timer_start(&p, &t, now + 2000000, 0);        /* in 2 ms */
    pt_timer_start(&p, &tk, now + 500000, 500000);   /* every 0.5 ms */

    while (!fired) {                                 /* the scheduler's loop */
        pt_nanos next;
        pt_timers_check(&p, 0, true, &next);         /* runs what is due */
    }
    pt_timer_stop_sync(&tk);                         /* now tk may be freed */
    printf("ticker ran %d times before the deadline\n", ticks);

    if (pt_timers_destroy(&p) != 0 || ticks < 1)
        return EXIT_FAILURE;
    return EXIT_SUCCESS;
}
