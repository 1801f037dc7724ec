/* The report's data model: its rows' statistics, where a row stands
 * (its group and cell, and the row of another design beside it), and the
 * names a group and a lateness distribution go by. What the report's
 * outputs (verdict.c, tables.c, plots.c) read the rows through. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct stat3 stat3_of(const double *v, int n)
{
    double s[REPORT_MAXREPS];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    return (struct stat3){med, s[0], s[n - 1]};
}

bool row_same_group(const struct row *a, const struct row *b)
{
    return strcmp(a->workload, b->workload) == 0 && strcmp(a->variant, b->variant) == 0;
}

bool row_same_cell(const struct row *a, const struct row *b)
{
    return row_same_group(a, b) && a->threads == b->threads;
}

const struct row *report_find(const struct report *r, const char *design, const struct row *like)
{
    for (int i = 0; i < r->nrows; i++)
        if (strcmp(r->rows[i].design, design) == 0 && row_same_cell(&r->rows[i], like))
            return &r->rows[i];
    return NULL;
}

void group_name(const struct row *w, char *out, size_t n)
{
    snprintf(out, n, "%s%s%s", w->workload, w->variant[0] ? " " : "", w->variant);
}

void variant_in_file_name(const char *variant, char *out, size_t n)
{
    size_t k = 0;
    for (; *variant && k + 1 < n; variant++)
        if (*variant != '=' && *variant != '%') /* slack=10% as slack10 */
            out[k++] = *variant == ' ' ? '-' : *variant;
    out[k] = 0;
}

void dist_name(const struct dist *d, const char *design, char *out, size_t n)
{
    char var[sizeof d->variant];
    variant_in_file_name(d->variant, var, sizeof var);
    snprintf(out, n, "lateness-%s%s%s%s%s-t%d", d->workload, var[0] ? "-" : "", var,
             design ? "-" : "", design ? design : "", d->threads);
}
