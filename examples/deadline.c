/* A read with a deadline, the netpoll way: a reader thread waits on an
 * empty pipe with a read deadline 5 ms ahead; the main thread sleeps in
 * pt_netpoll_wait, which runs the deadline's timer when it falls due, and
 * the reader gets -ETIMEDOUT. Then a byte arrives and a second read
 * succeeds. Built against the installed package by CI. */
#include <errno.h>
#include <pthread.h>
#include <ptimer/netpoll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pt_pollfd pd;
static atomic_int result = 1; /* 1: still waiting */

static void *reader(void *arg)
{
    (void)arg;
    pt_pollfd_set_deadline(&pd, PT_POLL_READ, pt_nanotime() + 5000000, NULL);
    atomic_store(&result, pt_pollfd_wait(&pd, PT_POLL_READ));
    return NULL;
}

int main(void)
{
    pt_netpoll *np;
    int p[2];
    if (pt_netpoll_create(&np, NULL) != 0 || pipe(p) != 0 ||
        pt_pollfd_open(np, &pd, p[0], PT_POLL_READ, NULL) != 0)
        return EXIT_FAILURE;
    printf("netpoll: %s\n", pt_netpoll_name(np));

    pthread_t th;
    pthread_create(&th, NULL, reader, NULL);
    pt_poll_event ev[8];
    while (atomic_load(&result) == 1)
        pt_netpoll_wait(np, 1000000, ev, 8); /* runs due deadlines; 1 ms at most */
    pthread_join(th, NULL);
    int timed_out = atomic_load(&result);
    printf("first read: %s\n", timed_out == -ETIMEDOUT ? "timed out" : "?");

    /* A new deadline clears the timed-out state; data makes the side ready. */
    pt_pollfd_set_deadline(&pd, PT_POLL_READ, 0, NULL);
    if (write(p[1], "x", 1) != 1)
        return EXIT_FAILURE;
    char c;
    int ok = pt_netpoll_wait(np, -1, ev, 8) == 1 &&       /* the event: pd is readable */
             pt_pollfd_wait(&pd, PT_POLL_READ) == 0 &&     /* so this returns at once */
             read(p[0], &c, 1) == 1 && c == 'x';
    printf("second read: %s\n", ok ? "got the byte" : "failed");

    pt_pollfd_close(&pd);
    close(p[0]);
    close(p[1]);
    return timed_out == -ETIMEDOUT && ok && pt_netpoll_destroy(np) == 0 ? EXIT_SUCCESS
                                                                       : EXIT_FAILURE;
}
