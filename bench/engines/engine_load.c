/* Loading an engine from a shared object, and the checks every table
 * passes, the built-in ones included: a table the tools cannot drive is
 * refused with one line saying why, before anything calls it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "loaded.h"

struct loaded loaded[MAX_LOADED];
int nloaded;

/* ABI 1's table is this one without set_slack, and its entry's name. */
#define ENGINE_V1_SIZE offsetof(struct pt_engine, set_slack)
#define ENGINE_V1_ENTRY "pt_engine_v1"

static bool name_ok(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '-'))
            return false;
    return n >= 1 && n <= 23;
}

const char *engine_check_table(const struct pt_engine *e, char *why, size_t n)
{
    /* abi and size first: they are the only fields every ABI shares */
    if (e->abi != PT_ENGINE_ABI || e->size != sizeof(struct pt_engine)) {
        snprintf(why, n,
                 "built for engine ABI %u (a table of %u bytes); this tool reads ABI %u (%zu "
                 "bytes) and 1 (%zu): rebuild it against this ptimer's engine.h",
                 e->abi, e->size, PT_ENGINE_ABI, sizeof(struct pt_engine), ENGINE_V1_SIZE);
        return why;
    }
    const char *name = e->name && name_ok(e->name) ? e->name : NULL;
    if (!name) {
        snprintf(why, n, "its name must be 1 to 23 of [a-z0-9-]");
        return why;
    }
    if (e->flags & ~PT_ENGINE_FLAGS_KNOWN) {
        snprintf(why, n, "engine %s: flags 0x%x are not this ABI's", name,
                 e->flags & ~PT_ENGINE_FLAGS_KNOWN);
        return why;
    }
    /* The ops every workload needs, then the timer-object group ptstress
     * needs whole or not at all. */
    struct {
        const char *op;
        bool set;
    } req[] = {
        {"create", e->create},
        {"destroy", e->destroy},
        {"thread_start", e->thread_start},
        {"thread_stop", e->thread_stop},
        {"schedule", e->schedule},
        {"cancel", e->cancel},
        {"reset", e->reset},
        {"poll", e->poll},
        {"idle", e->idle},
    };
    char missing[160] = "";
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
        if (!req[i].set)
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s",
                     *missing ? ", " : "", req[i].op);
    if (*missing) {
        snprintf(why, n, "engine %s: required ops missing: %s", name, missing);
        return why;
    }
    int tm = !!e->tm_new + !!e->tm_arm + !!e->tm_stop + !!e->tm_free;
    if (tm != 0 && tm != 4) {
        snprintf(why, n,
                 "engine %s: tm_new, tm_arm, tm_stop and tm_free come all or none (%d of 4)", name,
                 tm);
        return why;
    }
    if (!e->tm_new && (e->tm_start || e->tm_reset || e->tm_firing)) {
        snprintf(why, n, "engine %s: tm_start, tm_reset or tm_firing without timer objects", name);
        return why;
    }
    if ((e->flags & PT_ENGINE_STOP_WAITS) && !e->tm_new) {
        snprintf(why, n, "engine %s: PT_ENGINE_STOP_WAITS without timer objects", name);
        return why;
    }
    return NULL;
}

const struct pt_engine *engine_load(const char *path, bool (*reserved)(const char *name), char *why,
                                    size_t n)
{
    if (nloaded == MAX_LOADED) {
        snprintf(why, n, "%s: at most %d engines are loaded at once", path, MAX_LOADED);
        return NULL;
    }
    /* dlopen searches the library path for a bare name; a user means the
     * file in front of them. */
    char buf[4096];
    if ((size_t)snprintf(buf, sizeof buf, "%s%s", strchr(path, '/') ? "" : "./", path) >=
            sizeof buf ||
        strchr(path, '\n')) {
        snprintf(why, n, "%.64s...: the path is too long, or has a newline in it", path);
        return NULL;
    }
    void *so = dlopen(buf, RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        const char *err = dlerror();
        snprintf(why, n, "%s: cannot be loaded: %s", path, err ? err : "dlopen failed");
        return NULL;
    }
    const struct pt_engine *(*entry)(void);
    *(void **)&entry = dlsym(so, PT_ENGINE_ENTRY);
    bool v1 = !entry;
    if (v1)
        *(void **)&entry = dlsym(so, ENGINE_V1_ENTRY);
    const struct pt_engine *e = entry ? entry() : NULL;
    if (!entry || !e) {
        snprintf(why, n, "%s: %s", path,
                 !entry ? "no " PT_ENGINE_ENTRY " in it: export the table with PT_ENGINE_EXPORT"
                 : v1   ? ENGINE_V1_ENTRY "() returned NULL"
                        : PT_ENGINE_ENTRY "() returned NULL");
        dlclose(so);
        return NULL;
    }
    /* An ABI 1 table is read as this ABI's with no slack: a copy, with
     * set_slack NULL. Anything else under that entry the check refuses. */
    struct pt_engine *copy = NULL;
    if (v1 && e->abi == 1 && e->size == ENGINE_V1_SIZE) {
        copy = calloc(1, sizeof *copy);
        if (!copy) {
            snprintf(why, n, "%s: out of memory", path);
            dlclose(so);
            return NULL;
        }
        memcpy(copy, e, ENGINE_V1_SIZE);
        copy->abi = PT_ENGINE_ABI;
        copy->size = sizeof *copy;
        e = copy;
    }
    char inner[400];
    const char *bad = engine_check_table(e, inner, sizeof inner);
    if (!bad && (engine_find(e->name) || (reserved && reserved(e->name)))) {
        snprintf(inner, sizeof inner, "engine %s: the name is taken (%s)", e->name,
                 engine_find(e->name) && engine_is_loaded(engine_find(e->name))
                     ? "by an engine loaded before it"
                     : "by a design of this tool's; name yours otherwise");
        bad = inner;
    }
    char *keep = bad ? NULL : strdup(buf);
    if (!keep) {
        snprintf(why, n, "%s: %s", path, bad ? bad : "out of memory");
        free(copy);
        dlclose(so);
        return NULL;
    }
    /* A copy of the tool run afresh for one repetition loads it too. */
    const char *had = getenv(ENGINE_PATHS_ENV);
    size_t len = (had ? strlen(had) + 1 : 0) + strlen(keep) + 1;
    char *all = malloc(len);
    if (all) {
        snprintf(all, len, "%s%s%s", had ? had : "", had ? "\n" : "", keep);
        setenv(ENGINE_PATHS_ENV, all, 1);
        free(all);
    }
    loaded[nloaded++] = (struct loaded){e, keep};
    return e;
}

bool engine_is_loaded(const struct pt_engine *e)
{
    return engine_path(e) != NULL;
}

const char *engine_path(const struct pt_engine *e)
{
    for (int i = 0; i < nloaded; i++)
        if (loaded[i].e == e)
            return loaded[i].path;
    return NULL;
}

void engine_load_inherited(void)
{
    const char *env = getenv(ENGINE_PATHS_ENV);
    if (!env || nloaded)
        return;
    char *copy = strdup(env), *save = NULL, why[512];
    if (!copy)
        return;
    unsetenv(ENGINE_PATHS_ENV); /* engine_load sets it again, path by path */
    for (char *p = strtok_r(copy, "\n", &save); p; p = strtok_r(NULL, "\n", &save))
        if (!engine_load(p, NULL, why, sizeof why))
            fprintf(stderr, "%s\n", why);
    free(copy);
}
