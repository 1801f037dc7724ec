/* timerthread.pml: the TimerThread's sleep/wake protocol (timerthread/timerthread.c:
 * tt_loop, tt_announce, pt_timerthread_destroy), to check that the timer
 * thread never sleeps through a schedule that needs it or through destroy.
 *
 * The thread's loop, step by step as in the C: the stop check at the top,
 * the reset of the global nearest time (A), the pull of a bucket, the run of
 * a due head (re-checking nearest and stop under the lock), and the sleep
 * section: under the lock, go round again if something earlier was
 * announced, else publish `next` and sample nsignals; then the futex wait,
 * which returns when nsignals differs from the sample (or at the deadline
 * of a task it holds). One scheduler thread schedules one task (due at once,
 * or later), one unscheduler asks for a reclaim (tt_request_reclaim: the
 * flag, and nearest 0 with a bump of nsignals unless nearest is 0
 * already), and destroy stops the thread and joins it. The thread takes
 * the flag with its reset of nearest (A), under the lock, and the pull
 * that follows serves it.
 *
 * Checked: no invalid end state (a thread asleep for ever while destroy
 * waits to join it, or a due task never run), at the end no task left
 * unrun that was due and not dropped by destroy, and the thread never goes
 * to sleep with a reclaim asked for and not yet served (unless its wait
 * returns at once: a due task).
 *
 * -DBUG_DESTROY_NO_STOP_CHECK is the loop before commit 2cdb6d0, without
 * the stop flag read again under the lock in the sleep section: this model
 * found that destroy could then join a thread asleep for ever (a seeded bug
 * now, which check.sh requires spin to catch).
 *
 * -DBUG_RECLAIM_NO_WAKE: a reclaim request that only sets its flag; the
 * thread may then sleep until its far task's time with the removed tasks
 * unreclaimed (the assertion in the sleep section).
 *
 * -DCFG_HELP: a scheduler's due task, a helper that does what
 * tt_help_reclaim does (take the bucket's list under its lock, put the
 * pending task back with a schedule's push and announce it), the thread,
 * and no destroy: once nothing can move (spin's timeout), the due task
 * must have run. -DBUG_HELP_NO_ANNOUNCE puts it back unannounced, and the
 * thread sleeps through it. */

#define NEVER 3         /* PT_MAXWHEN */

bit  stop;              /* tt->stop */
bit  lk;                /* tt->lock */
byte nearest = NEVER;   /* tt->nearest (global lock) */
byte nsig;              /* tt->nsignals, the futex word */
bit  blk;               /* the bucket's lock */
byte bucket = NEVER;    /* the bucket's one task (its when), NEVER: empty */
byte bnear = NEVER;     /* the bucket's nearest */
byte heapw = NEVER;     /* the thread's heap: its one task's when */
byte ran;               /* tasks run */
bit  joined;            /* the thread has left its loop */
bit  scheduled_due;     /* a task due at once was scheduled */
bit  reclaim;           /* tt->reclaim (global lock) */

inline lock(l)   { atomic { l == 0 -> l = 1 } }
inline unlock(l) { l = 0 }

proctype Thread()
{
    byte next, expected, pa;
top:
    do
    :: stop -> break                     /* while (!tt_stopping(tt)) */
    :: else ->
        lock(lk); nearest = NEVER; reclaim = 0; unlock(lk);   /* (A): the pull serves it */
        /* pull: tt_consume under the bucket's lock */
        lock(blk);
        if
        :: bucket != NEVER ->
            if
            :: bucket < heapw -> heapw = bucket
            :: else
            fi;
            bucket = NEVER; bnear = NEVER
        :: else
        fi;
        unlock(blk);
        /* run what is due (when 0 is due, anything else is not yet) */
        if
        :: heapw == 0 ->
            lock(lk); pa = (heapw > nearest); unlock(lk);
            if
            :: pa || stop -> pa = 0; goto top          /* pull again */
            :: else -> heapw = NEVER; ran++
            fi
        :: else
        fi;
        next = heapw;
        lock(lk);
#ifdef BUG_DESTROY_NO_STOP_CHECK
        if
        :: next > nearest -> unlock(lk); next = 0; goto top
        :: else
        fi;
#else
        /* stop, again under the lock (2cdb6d0) */
        if
        :: next > nearest || stop -> unlock(lk); next = 0; goto top
        :: else
        fi;
#endif
        nearest = next;
        expected = nsig;
        /* a reclaim asked for before this point lowered nearest to 0, so
         * only a due head (a wait that returns at once) gets here with it */
        assert(!reclaim || next == 0);
        unlock(lk);
        /* pt__futex_wait(&nsignals, expected, next): returns when the word
         * changed, or at the deadline of a task it holds; asleep here for
         * good is a valid end only once destroy has nobody left to join
         * (CFG_HELP has no destroy) */
end_wait:
        if
        :: nsig != expected
        :: next != NEVER
        fi;
        next = 0; expected = 0
    od;
    joined = 1
}

/* pt_timerthread_schedule of one task: bucket push, then tt_announce if it
 * is the earliest of its bucket */
proctype Scheduler()
{
    byte w, earlier;
    if
    :: w = 0; scheduled_due = 1
    :: w = 1
    fi;
    if
    :: stop -> goto done                 /* schedule refuses once stopped */
    :: else
    fi;
    lock(blk);
    bucket = w;
    if
    :: w < bnear -> bnear = w; earlier = 1
    :: else
    fi;
    unlock(blk);
    if
    :: earlier ->
        lock(lk);
        if
        :: w < nearest -> nearest = w; nsig++   /* then futex wake */
        :: else
        fi;
        unlock(lk)
    :: else
    fi;
done:
    skip
}

/* tt_request_reclaim, from pt_timerthread_unschedule */
proctype Unscheduler()
{
    lock(lk);
    reclaim = 1;
#ifndef BUG_RECLAIM_NO_WAKE
    if
    :: nearest != 0 -> nearest = 0; nsig++      /* then futex wake */
    :: else
    fi;
#endif
    unlock(lk)
}

/* tt_help_reclaim, from a thread whose reclaim request went unserved */
proctype Helper()
{
    byte took, earlier;
    lock(blk);
    took = bucket; bucket = NEVER; bnear = NEVER;          /* tt_consume */
    unlock(blk);
    if
    :: took != NEVER ->                  /* pending: put it back */
        lock(blk);
        bucket = took;
        if
        :: took < bnear -> bnear = took; earlier = 1
        :: else
        fi;
        unlock(blk);
#ifndef BUG_HELP_NO_ANNOUNCE
        if
        :: earlier ->
            lock(lk);
            if
            :: took < nearest -> nearest = took; nsig++
            :: else
            fi;
            unlock(lk)
        :: else
        fi
#endif
    :: else
    fi
}

/* Once nothing can move: a due task scheduled has run. */
proctype Monitor()
{
    timeout -> assert(!scheduled_due || ran == 1)
}

/* pt_timerthread_destroy from another thread */
proctype Destroyer()
{
    stop = 1;
    lock(lk);
    nearest = 0;
    nsig++;
    unlock(lk);
    /* futex wake, then pthread_join */
    joined == 1
}

init
{
    atomic {
        run Thread();
        run Scheduler();
#ifdef CFG_HELP
        run Helper();
        run Monitor()
#else
        run Unscheduler();
        run Destroyer()
#endif
    }
}
