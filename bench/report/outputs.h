/* The report's outputs, leaves of its data model (model.h): report.c
 * prints them once the run is over, in this order. */
#ifndef PTBENCH_REPORT_OUTPUTS_H
#define PTBENCH_REPORT_OUTPUTS_H

#include <stdio.h>

#include "report.h"

/* The winner of each workload and thread count, every design's figure
 * over the winner's. */
void verdict_print(const struct report *r, FILE *f);
/* A table per workload, with every figure a row has. */
void tables_print(const struct report *r, FILE *f);
/* gnuplot scripts and the lateness distributions' plots (results/). */
void plots_write(const struct report *r);

#endif
