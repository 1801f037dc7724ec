/* broken: pheap with a stop that skips its CAS, built only into the test
 * copy of ptstress (ptstress-broken), so that ctest sees the tool fail on
 * a known bug, with the right violation kind (fired-after-stop). Its stop
 * answers as a real one would (1 for a pending timer) but leaves the timer
 * armed, as a stop whose CAS from Waiting to Deleted never happened. */
#include "ptimer/ptimer.h"
#include "stress.h"

static int br_tm_stop(void *t)
{
    enum pt_timer_status s = pt_timer_status(t);
    return s == PT_TIMER_WAITING || s == PT_TIMER_MODIFIED_EARLIER || s == PT_TIMER_MODIFIED_LATER;
}

static struct engine broken;

const struct engine *engine_broken(void)
{
    if (!broken.name) {
        broken = engine_pheap;
        broken.name = "broken";
        broken.what = "pheap whose timer-object stop skips its CAS (tests only)";
        broken.tm_stop = br_tm_stop;
    }
    return &broken;
}
