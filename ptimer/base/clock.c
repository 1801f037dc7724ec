/* pt_nanotime: CLOCK_MONOTONIC through the vDSO.
 *
 * The TSC would be cheaper to read, but it needs a
 * calibration that is proven to agree with CLOCK_MONOTONIC; until a test
 * bounds that error, the kernel's clock is the only clock.
 */
#include "ptimer/clock.h"

#include <time.h>

pt_nanos pt_nanotime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (pt_nanos)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
