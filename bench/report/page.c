/* The results page: one run, as Markdown, short enough to read top to
 * bottom. The header says what ran where (command, commit, date, machine,
 * clock); the verdict comes first, as it is what the page is read for,
 * then the figures its ratios were taken over, then what the run left
 * out. Every column of every row stays in the run's own files (table.txt,
 * the JSON lines, the CSV). Nothing here is written by hand: why the
 * figures are what they are lives in bench/RESULTS-NOTES.md. */
#include <stdio.h>

#include "model.h"
#include "outputs.h"

void page_write(const struct report *r, FILE *f)
{
    fprintf(f,
            "# ptbench results\n\n"
            "Written by ptbench from the one run below, and kept as it wrote it. How to\n"
            "read it, and why the figures are what they are: bench/RESULTS-NOTES.md.\n"
            "Earlier runs and investigations: bench/journal/.\n\n"
            "```\n%s```\n\n"
            "## Verdict: which design, when\n\n```\n",
            r->header);
    verdict_print(r, f);
    fprintf(f, "```\n\n"
               "## The figures\n\n"
               "Each design's own figure on each line of the verdict (the units are the\n"
               "line's metric), medians of the repetitions.\n\n```\n");
    verdict_figures_print(r, f);
    fprintf(f, "```\n");
    if (r->notes[0])
        fprintf(f, "\n## What this run left out or flagged\n\n```\n%s```\n", r->notes);
    fprintf(f, "\nEvery column of every row (lateness quantiles, CPU and system time, memory,\n"
               "the scheduler's counters, paired ratios): the run's table.txt, ptbench.jsonl\n"
               "and ptbench.csv, and its plots, in the folder it was written to (-o).\n");
}
