/* The README's wheel example: one P's timing wheel, an RPC-style timeout
 * armed and cancelled, and a deadline that fires, driven by a check loop
 * as a scheduler would drive it. */
#include <ptimer/pwheel.h>
#include <stdio.h>
#include <stdlib.h>

static int fired;

static void deadline(void *arg, uintptr_t seq)
{
    (void)arg;
    printf("deadline %lu fired\n", (unsigned long)seq);
    fired++;
}

int main(void)
{
    pt_wheel w;                                /* one P's wheel */
    if (pt_wheel_init(&w, 0, NULL, NULL) != 0) /* default tick, no poller to wake */
        return EXIT_FAILURE;

    pt_wheel_timer rpc, t;
    pt_wheel_timer_init(&rpc, deadline, NULL);
    pt_wheel_timer_init(&t, deadline, NULL);

    pt_nanos now = pt_nanotime();
    pt_wheel_timer_modify(&w, &rpc, now + 100000000, 0, deadline, NULL, 1); /* 100 ms timeout */
    pt_wheel_timer_modify(&w, &t, now + 2000000, 0, deadline, NULL, 2);     /* in 2 ms */
    if (pt_wheel_timer_stop(&rpc) != 1) /* the reply came: O(1), unlinked at once */
        return EXIT_FAILURE;

    pt_nanos late = 0;
    while (!fired) { /* the scheduler's loop */
        pt_nanos next;
        pt_wheel_check(&w, 0, &next); /* runs what is due */
        if (fired)
            late = pt_nanotime() - (now + 2000000);
    }
    printf("fired %lld ns after its time\n", (long long)late);
    pt_wheel_timer_stop_sync(&t); /* now t may be freed */
    if (pt_wheel_destroy(&w) != 0 || late < 0)
        return EXIT_FAILURE;
    return EXIT_SUCCESS;
}
