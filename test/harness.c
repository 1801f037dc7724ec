/* Runs one named test (as ctest does), or all of them in order. */
#include "harness.h"

#include <dirent.h>
#include <string.h>

#include "ptimer/clock.h"

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

static void run(const struct pt_test *t)
{
    pt_nanos t0 = pt_nanotime();
    t->fn();
    printf("ok   %-52s %8.1f ms\n", t->name, (double)(pt_nanotime() - t0) / 1e6);
    fflush(stdout);
}

int pt_test_main(const struct pt_test *tests, size_t n, int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < n; i++)
            printf("%s %s\n", tests[i].label, tests[i].name);
        return 0;
    }
    if (argc > 1) {
        for (int a = 1; a < argc; a++) {
            size_t i = 0;
            while (i < n && strcmp(tests[i].name, argv[a]) != 0)
                i++;
            if (i == n) {
                fprintf(stderr, "no test named %s (--list lists them)\n", argv[a]);
                return 2;
            }
            run(&tests[i]);
        }
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        run(&tests[i]);
    printf("%zu passed, 0 failed\n", n);
    return 0;
}
