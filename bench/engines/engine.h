/* The designs ptbench and ptstress know: those built in, each a client of
 * the public table (ptimer/engine.h), and those loaded with --engine.
 *
 * Costs the built-in engines pay, so that designs compare fairly:
 *  - the caller reads the clock once per arm (workloads do it, not engines);
 *  - cancel disposes of the timer: after it, the engine may reuse the
 *    timer's memory without help from the caller (pheap recycles a stopped
 *    timer once its heap has unlinked it, as Go's GC reclaims a stopped
 *    time.Timer; pheap-sync frees it at once through pt_timer_stop_sync).
 */
#ifndef PTBENCH_ENGINE_H
#define PTBENCH_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptimer/clock.h"
#include "ptimer/engine.h"

#define ENGINE_HEAD .abi = PT_ENGINE_ABI, .size = sizeof(struct pt_engine)

extern const struct pt_engine engine_pheap, engine_pheap_sync, engine_pheap_staged,
    engine_timerthread, engine_globalheap, engine_floor, engine_kernel, engine_pwheel, engine_lheap,
    engine_kernel_slack;

/* A built-in or loaded design by name; NULL if none. */
const struct pt_engine *engine_find(const char *name);
/* The i-th built-in design, NULL past the last. */
const struct pt_engine *engine_builtin(int i);
/* Whether the design was loaded with --engine. */
bool engine_is_loaded(const struct pt_engine *e);
/* The path it was loaded from, NULL for a built-in one. */
const char *engine_path(const struct pt_engine *e);

/* Loads the engine in the shared object at `path` (engine_load.c): its
 * table, checked as every built-in one is. NULL, with a one-line reason in
 * why, if it cannot be used; `reserved` says whether a name belongs to the
 * tool (a built-in design, a scheduler design, a peer). */
const struct pt_engine *engine_load(const char *path, bool (*reserved)(const char *name),
                                    char *why, size_t n);
/* NULL if the table can be driven, else why not (in why). */
const char *engine_check_table(const struct pt_engine *e, char *why, size_t n);
/* Loads every engine named in the environment variable ENGINE_PATHS_ENV
 * (paths, one a line), as a copy of the tool executed afresh must. */
#define ENGINE_PATHS_ENV "PTIMER_ENGINE_PATHS"
void engine_load_inherited(void);

static inline bool engine_has(const struct pt_engine *e, enum pt_engine_flags f)
{
    return (e->flags & f) != 0;
}

/* Sleeps until the CLOCK_MONOTONIC time `until` (a thread with nothing to
 * run); shared by the engines whose firing happens elsewhere. */
void bench_sleep_until(pt_nanos until);

#endif
