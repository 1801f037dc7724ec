/* The bad-input table's shared parts: running tables of rows, and the
 * check that a header declares no public function without a row. Built
 * into every suite that holds rows (verify, netpoll, sched), so each
 * checks the headers of the libraries it links. */
#include <regex.h>
#include <stdbool.h>
#include <string.h>

#include "badinput.h"
#include "harness.h"

void pt_badinput_run(const struct badinput_table *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t r = 0; r < t[i].n; r++)
            t[i].rows[r].row();
}

/* The public functions a header declares: names pt_... followed by "(" in
 * its text with comments taken out (a typedef of a function pointer reads
 * "(*pt_x)(" and is not counted, nor a type that a function pointer
 * returns, "pt_t (*f)("; "*pt_x(" returns a pointer and is). */
int pt_badinput_declared(const char *path, char names[][64], int max)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    static char text[1 << 17];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    CHECK(len < sizeof text - 1); /* the whole header */
    text[len] = 0;
    for (char *c = strstr(text, "/*"); c; c = strstr(c, "/*")) {
        char *e = strstr(c + 2, "*/");
        CHECK(e != NULL);
        memset(c, ' ', (size_t)(e + 2 - c));
    }
    regex_t re;
    CHECK_EQ(regcomp(&re, "([^*a-z_]|[^(][*])(pt_[a-z0-9_]+)[ \t]*\\([^*]", REG_EXTENDED), 0);
    int n = 0;
    regmatch_t m[3];
    for (const char *p = text; regexec(&re, p, 3, m, 0) == 0; p += m[0].rm_eo) {
        int l = (int)(m[2].rm_eo - m[2].rm_so);
        CHECK(n < max && l < 64);
        memcpy(names[n], p + m[2].rm_so, (size_t)l);
        names[n][l] = 0;
        n++;
    }
    regfree(&re);
    fprintf(stderr, "%s: %d public functions\n", path, n);
    return n;
}

static bool has_row(const char *name, const struct badinput_table *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t r = 0; r < t[i].n; r++)
            if (strcmp(t[i].rows[r].name, name) == 0)
                return true;
    return false;
}

int pt_badinput_check_header(const char *path, const struct badinput_table *t, size_t n)
{
    static char names[256][64];
    int count = pt_badinput_declared(path, names, 256);
    for (int i = 0; i < count; i++)
        if (!has_row(names[i], t, n)) {
            fprintf(stderr, "%s declares %s, which has no bad-input row\n", path, names[i]);
            CHECK(!"a public function without a bad-input row");
        }
    return count;
}
