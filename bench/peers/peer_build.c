/* Finding the peers' programs (peer_build.h). ptbench never builds one:
 * a stale or half-built peer would be measured as if it were the source. */
#include "peer_build.h"

#include <stdio.h>
#include <unistd.h>

static const char *look(struct peer_build *b, const char *needs)
{
    if (b->state == 0) {
        b->state = access(b->path, X_OK) == 0 ? 1 : -1;
        snprintf(b->why, sizeof b->why,
                 "not built: cmake --build %s --target ptbench-peers (needs %s)", PT_BINARY_DIR,
                 needs);
    }
    return b->state > 0 ? b->path : NULL;
}

const char *peer_go_program(struct peer_build *b)
{
    if (b->state == 0)
        snprintf(b->path, sizeof b->path, "%s/%s", PT_BINARY_DIR, b->name);
    return look(b, "golang-1.19-go");
}

const char *peer_cargo_program(struct peer_build *b)
{
    if (b->state == 0)
        snprintf(b->path, sizeof b->path, "%s/cargo-target/release/%s", PT_BINARY_DIR, b->name);
    return look(b, "cargo and librust-tokio-dev");
}
