/* Runs one named test (as ctest does), or all of them in order. */
#include "harness.h"

#include <dirent.h>
#include <stdbool.h>
#include <string.h>

#include "ptimer/clock.h"
#include "sched/sanitizer.h"

#ifdef PT__TSAN
/* TSan waits a second before a process exits if any other thread of its
 * is alive (a pooled TSan fiber counts), to catch races with exit: each
 * test is its own process, so that second was most of a TSan run. The
 * tests join what they start. TSAN_OPTIONS still overrides it. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "atexit_sleep_ms=0";
}
#endif

int pt_test_threads_named(const char *prefix)
{
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], name[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue; /* the thread just exited */
        if (fgets(name, sizeof name, f) && strncmp(name, prefix, strlen(prefix)) == 0)
            n++;
        fclose(f);
    }
    closedir(d);
    return n;
}

static const char *skipped; /* the running test's reason to skip, if it gave one */

void pt_test_skip(const char *why)
{
    skipped = why;
}

/* Runs t; whether it skipped. */
static bool run(const struct pt_test *t)
{
    skipped = NULL;
    pt_nanos t0 = pt_nanotime();
    if (t->fn)
        t->fn();
    else
        t->fn_mode(t->mode);
    if (skipped)
        printf("skip %-52s %s\n", t->name, skipped);
    else
        printf("ok   %-52s %8.1f ms\n", t->name, (double)(pt_nanotime() - t0) / 1e6);
    fflush(stdout);
    return skipped != NULL;
}

int pt_test_main(const struct pt_test *tests, size_t n, int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < n; i++)
            printf("%s %s\n", tests[i].label, tests[i].name);
        return 0;
    }
    if (argc > 1) { /* skipped only if every test named skipped */
        int nskip = 0;
        for (int a = 1; a < argc; a++) {
            size_t i = 0;
            while (i < n && strcmp(tests[i].name, argv[a]) != 0)
                i++;
            if (i == n) {
                fprintf(stderr, "no test named %s (--list lists them)\n", argv[a]);
                return 2;
            }
            nskip += run(&tests[i]);
        }
        return nskip == argc - 1 ? PT_TEST_SKIP_CODE : 0;
    }
    size_t nskip = 0;
    for (size_t i = 0; i < n; i++)
        nskip += run(&tests[i]);
    printf("%zu passed, %zu skipped, 0 failed\n", n - nskip, nskip);
    return 0;
}
