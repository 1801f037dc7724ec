/* The peers' programs that the build system makes (peers/CMakeLists.txt,
 * target ptbench-peers): where ptbench finds each, or why it cannot. */
#ifndef PTBENCH_PEER_BUILD_H
#define PTBENCH_PEER_BUILD_H

#ifndef PT_BINARY_DIR
#define PT_BINARY_DIR "."
#endif

struct peer_build {
    const char *dir;  /* its sources: bench/peers/<dir> */
    const char *name; /* the program's name */
    int state;        /* 0: not looked for, 1: there, -1: not */
    char why[160];    /* why not, once state is -1 */
    char path[512];   /* the program, once state is 1 */
};

/* The program's path, or NULL with the reason in b->why: a Go peer's in
 * the binary directory, a cargo peer's under its cargo-target/release. */
const char *peer_go_program(struct peer_build *b);
const char *peer_cargo_program(struct peer_build *b);

#endif
