/* The clock's source chooser, for the tests: pt__clock_select(spec)
 * chooses again as pt_nanotime's first use does with PT_CLOCK=spec (NULL:
 * unset), so one test process can read both sources. Not for use while
 * another thread reads the clock, and time read before the switch is not
 * ordered with time read after it. */
#ifndef PTIMER_CLOCK_SELECT_H
#define PTIMER_CLOCK_SELECT_H

void pt__clock_select(const char *spec);

#endif
