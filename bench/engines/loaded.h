/* The engines loaded with --engine, shared by the registry and the
 * loader. */
#ifndef PTBENCH_LOADED_H
#define PTBENCH_LOADED_H

#include "engine.h"

#define MAX_LOADED 8

struct loaded {
    const struct pt_engine *e;
    const char *path;
};

extern struct loaded loaded[MAX_LOADED];
extern int nloaded;

#endif
