/* The fuzz targets run on every input kept in the repository: the seed
 * corpus (test/fuzz/corpus/<target>/) and the inputs that once made a
 * target fail (test/fuzz/regress/<target>/, each named for what it
 * caught). This is how a crash the fuzzer finds becomes a regression test:
 * save the input under regress/, and every build -- release, TSan, ASan --
 * runs it from then on. */
#include <dirent.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"

int pt_fuzz_ptimer_one(const uint8_t *data, size_t size);
int pt_fuzz_timerthread_one(const uint8_t *data, size_t size);
int pt_fuzz_pwheel_one(const uint8_t *data, size_t size);
int pt_fuzz_lheap_one(const uint8_t *data, size_t size);

static int replay_dir(const char *dir, int (*one)(const uint8_t *, size_t))
{
    DIR *d = opendir(dir);
    if (!d)
        return 0; /* no regressions yet */
    int n = 0;
    static uint8_t buf[1 << 20];
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        CHECK(f != NULL);
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        fprintf(stderr, "replay %s (%zu bytes)\n", path, len);
        CHECK_EQ(one(buf, len), 0);
        n++;
    }
    closedir(d);
    return n;
}

static void replay(const char *target, int (*one)(const uint8_t *, size_t))
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/corpus/%s", PT_FUZZ_DIR, target);
    int seeds = replay_dir(dir, one);
    CHECK(seeds > 0); /* the seed corpus is in the repository */
    snprintf(dir, sizeof dir, "%s/regress/%s", PT_FUZZ_DIR, target);
    replay_dir(dir, one);
}

void test_fuzz_ptimer_corpus_and_regressions_pass(void)
{
    replay("ptimer", pt_fuzz_ptimer_one);
}

void test_fuzz_timerthread_corpus_and_regressions_pass(void)
{
    replay("timerthread", pt_fuzz_timerthread_one);
}

void test_fuzz_pwheel_corpus_and_regressions_pass(void)
{
    replay("pwheel", pt_fuzz_pwheel_one);
}

void test_fuzz_lheap_corpus_and_regressions_pass(void)
{
    replay("lheap", pt_fuzz_lheap_one);
}
