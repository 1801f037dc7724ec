/* The report's data model, which its outputs read: rows.c (statistics,
 * groups and cells, names), metric.c (what a row is judged by) and
 * fields.c (the JSON and CSV field list). The outputs (outputs.h) and
 * report.c, which prints them, sit on top; nothing here calls them. */
#ifndef PTBENCH_REPORT_MODEL_H
#define PTBENCH_REPORT_MODEL_H

#include <stddef.h>
#include <stdio.h>

#include "report.h"

struct stat3 stat3_of(const double *v, int n);

/* A row's place in the report: a group (workload and variant) is one
 * table, a cell is a group at one thread count. */
bool row_same_group(const struct row *a, const struct row *b);
bool row_same_cell(const struct row *a, const struct row *b);
const struct row *report_find(const struct report *r, const char *design, const struct row *like);
/* "ticker T=1000", "rpc": a group's name. */
void group_name(const struct row *w, char *out, size_t n);

/* Every row is judged by one figure, lower is better: ns/op per thread
 * (throughput), p99 lateness (latency, ticker, netpoll), bytes per timer
 * (memory) or per parked G (memory in the scheduler). */
const char *metric_name(enum wl_kind kind, bool in_sched);
double metric_value(const struct row *w); /* <= 0: none */
/* Ticks delivered over ticks due, or -1 if the row has no ticks due. */
double ticks_delivered(const struct row *w);
/* Whether the row may be its cell's winner: a reference floor may not,
 * nor a ticker row that delivered fewer ticks than the cell's best
 * (`most`, a share) by more than TICKS_SLACK: its lateness leaves out the
 * worst ticks. */
bool metric_ranked(const struct row *w, double most);
#define TICKS_SLACK 0.01
const char *kind_name(enum wl_kind kind);
/* A ratio in at most 6 characters, 3 significant digits. */
void ratio_format(char *out, size_t n, double ratio);

/* A distribution's file name, lateness-WORKLOAD[-VARIANT][-DESIGN]-tN
 * (no directory, no extension; the variant without '=': T=1000 is
 * T1000); without a design, its plot's. */
void dist_name(const struct dist *d, const char *design, char *out, size_t n);
/* A row group's variant as part of a file name: "N=1M guard=auto" as
 * "N1M-guardauto". */
void variant_in_file_name(const char *variant, char *out, size_t n);

void fields_csv_header(FILE *f);
void fields_csv(FILE *f, const struct row *w);
void fields_json(FILE *f, const struct row *w);

#endif
