/* Go 1.23's per-P timers (ptimer/lheap.h): an RPC-style timeout armed and
 * stopped (a zombie until the heap looks), a ticker that keeps its phase,
 * and the check loop a scheduler drives them with. */
#include <ptimer/lheap.h>
#include <stdio.h>
#include <stdlib.h>

static int ticks;

static void tick(void *arg, uintptr_t seq)
{
    (void)arg;
    printf("tick %d of timer %lu\n", ++ticks, (unsigned long)seq);
}

static void timeout(void *arg, uintptr_t seq)
{
    (void)arg;
    printf("timeout %lu fired: the reply never came\n", (unsigned long)seq);
}

int main(void)
{
    pt_lheap h;                             /* one P's timers */
    if (pt_lheap_init(&h, NULL, NULL) != 0) /* no poller to wake */
        return EXIT_FAILURE;

    pt_lheap_timer rpc, ticker;
    pt_lheap_timer_init(&rpc, timeout, NULL);
    pt_lheap_timer_init(&ticker, tick, NULL);

    pt_nanos now = pt_nanotime();
    pt_lheap_timer_modify(&h, &rpc, now + 100000000, 0, timeout, NULL, 1);     /* 100 ms */
    pt_lheap_timer_modify(&h, &ticker, now + 1000000, 1000000, tick, NULL, 2); /* every 1 ms */
    if (pt_lheap_timer_stop(&rpc) != 1) /* the reply came: the timer's lock, nothing else */
        return EXIT_FAILURE;
    printf("stopped: %zu entries, %zu of them zombies\n", pt_lheap_len(&h), pt_lheap_zombies(&h));

    while (ticks < 3) { /* the scheduler's loop */
        pt_nanos next;
        pt_lheap_check(&h, 0, &next); /* runs what is due, tidies the heap */
    }
    printf("after the checks: %zu entries, %zu zombies\n", pt_lheap_len(&h), pt_lheap_zombies(&h));
    pt_lheap_timer_stop_sync(&ticker); /* out of the heap: now it may be freed */
    pt_lheap_timer_stop_sync(&rpc);
    if (pt_lheap_destroy(&h) != 0 || pt_lheap_timer_in_heap(&rpc))
        return EXIT_FAILURE;
    return EXIT_SUCCESS;
}
