/* The peers' programs that ptbench builds itself (peer_build.c): Go's and
 * tokio's, from their sources under bench/peers, once per ptbench process. */
#ifndef PTBENCH_PEER_BUILD_H
#define PTBENCH_PEER_BUILD_H

#ifndef PT_SOURCE_DIR
#define PT_SOURCE_DIR "."
#endif
#ifndef PT_BINARY_DIR
#define PT_BINARY_DIR "."
#endif

struct peer_build {
    const char *dir;  /* its sources: bench/peers/<dir> */
    const char *name; /* the program's name */
    int state;        /* 0: not tried, 1: usable, -1: not */
    char why[128];    /* why not, once state is -1 */
    char path[512];   /* the program, once state is 1 */
};

/* The program's path, or NULL with the reason in b->why. Go: Debian's Go
 * 1.19, into the binary directory (go build's cache makes a rebuild of
 * unchanged sources quick, and a changed source is never run stale;
 * without a toolchain, a program built earlier is used as it is). Cargo:
 * offline against Debian's crates (the source's .cargo/config.toml). */
const char *peer_go_build(struct peer_build *b);
const char *peer_cargo_build(struct peer_build *b);

#endif
