/* The report's outputs, leaves of its data model (model.h): report.c
 * prints them once the run is over, in this order, as text and as the
 * results page (page.c, the one output that calls the others). */
#ifndef PTBENCH_REPORT_OUTPUTS_H
#define PTBENCH_REPORT_OUTPUTS_H

#include <stdio.h>

#include "report.h"

/* The winner of each workload and thread count, every design's figure
 * over the winner's. */
void verdict_print(const struct report *r, FILE *f);
/* The verdict's lines again, each design's own figure in place of its
 * ratio: what the ratios were taken over. */
void verdict_figures_print(const struct report *r, FILE *f);
/* A table per workload, with every figure a row has. */
void tables_print(const struct report *r, FILE *f);
/* gnuplot scripts and the lateness distributions' plots (results/). */
void plots_write(const struct report *r);
/* The results page (Markdown): the run's header, the verdict, its
 * figures, the notes; the tables stay in the run's table.txt. */
void page_write(const struct report *r, FILE *f);

#endif
