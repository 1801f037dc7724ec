/* Building the peers' programs (peer_build.h). */
#include "peer_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

const char *peer_go_build(struct peer_build *b)
{
    if (b->state == 0) {
        snprintf(b->path, sizeof b->path, "%s/%s", PT_BINARY_DIR, b->name);
        const char *go = access("/usr/lib/go-1.19/bin/go", X_OK) == 0 ? "/usr/lib/go-1.19/bin/go"
                         : system("command -v go >/dev/null 2>&1") == 0 ? "go"
                                                                          : NULL;
        if (go) {
            char cmd[1024];
            snprintf(cmd, sizeof cmd,
                     "cd %s/bench/peers/%s && GOCACHE=%s/go-cache GOFLAGS=-mod=mod %s build -o %s "
                     ". >/dev/null 2>&1",
                     PT_SOURCE_DIR, b->dir, PT_BINARY_DIR, go, b->path);
            b->state = system(cmd) == 0 ? 1 : -1;
            snprintf(b->why, sizeof b->why, "go build failed in bench/peers/%s", b->dir);
        } else {
            b->state = access(b->path, X_OK) == 0 ? 1 : -1;
            snprintf(b->why, sizeof b->why, "no Go toolchain: apt-get install golang-1.19-go");
        }
    }
    return b->state > 0 ? b->path : NULL;
}

const char *peer_cargo_build(struct peer_build *b)
{
    if (b->state == 0) {
        snprintf(b->path, sizeof b->path, "%s/cargo-target/release/%s", PT_BINARY_DIR, b->name);
        if (system("command -v cargo >/dev/null 2>&1") != 0) {
            snprintf(b->why, sizeof b->why, "no cargo: apt-get install cargo");
            b->state = -1;
        } else {
            char cmd[1024];
            snprintf(cmd, sizeof cmd,
                     "cd %s/bench/peers/%s && cargo build --release --quiet --target-dir "
                     "%s/cargo-target >/dev/null 2>&1",
                     PT_SOURCE_DIR, b->dir, PT_BINARY_DIR);
            b->state = system(cmd) == 0 ? 1 : -1;
            snprintf(b->why, sizeof b->why, "cargo build failed in bench/peers/%s", b->dir);
        }
    }
    return b->state > 0 ? b->path : NULL;
}
