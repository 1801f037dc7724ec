/* ptbench-layout: the one-off measurement behind heap4's entry layout.
 *
 * ptimer's heap stores {when, timer *} (16 bytes an entry, Go 1.23's
 * layout); Go 1.14-1.22 stored only the timer pointer (8 bytes) and read
 * `when` through it at every comparison. This program times both layouts
 * doing the same sifts, so the README can say what the 8 bytes buy. The
 * pointer-only heap below exists only as this experiment's control.
 *
 *   build-bench/bench/ptbench-layout          (prints a table)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptimer/ptimer.h"
#include "rng.h"

struct node { /* a timer-sized node (sizeof(pt_timer)), `when` inside */
    pt_nanos when;
    uint32_t idx;
    char pad[sizeof(pt_timer) - sizeof(pt_nanos) - sizeof(uint32_t)];
};
_Static_assert(sizeof(struct node) == sizeof(pt_timer), "a node is a timer's size");

/* Both layouts with the same algorithms as heap4.c (tournament of four
 * children, Floyd's root removal), so that the layout is the only
 * difference: E is the entry type, KEY(v, i) reads entry i's time. */
#define DEFINE_HEAP(NAME, E, KEY, NODE)                                                        \
    struct NAME {                                                                              \
        E *v;                                                                                  \
        uint32_t len;                                                                          \
    };                                                                                         \
    static inline uint32_t NAME##_minc(const E *v, uint32_t c, uint32_t n)                     \
    {                                                                                          \
        if (c + 4 <= n) {                                                                      \
            uint32_t a = KEY(v, c + 1) < KEY(v, c) ? c + 1 : c;                                \
            uint32_t b = KEY(v, c + 3) < KEY(v, c + 2) ? c + 3 : c + 2;                        \
            return KEY(v, b) < KEY(v, a) ? b : a;                                              \
        }                                                                                      \
        uint32_t m = c;                                                                        \
        for (uint32_t k = c + 1; k < n; k++)                                                   \
            if (KEY(v, k) < KEY(v, m))                                                         \
                m = k;                                                                         \
        return m;                                                                              \
    }                                                                                          \
    static inline void NAME##_up(struct NAME *h, uint32_t i)                                   \
    {                                                                                          \
        E *v = h->v, e = v[i];                                                                 \
        while (i > 0) {                                                                        \
            uint32_t p = (i - 1) / 4;                                                          \
            if (KEY(&e, 0) >= KEY(v, p))                                                       \
                break;                                                                         \
            v[i] = v[p];                                                                       \
            NODE(v, i)->idx = i;                                                               \
            i = p;                                                                             \
        }                                                                                      \
        v[i] = e;                                                                              \
        NODE(v, i)->idx = i;                                                                   \
    }                                                                                          \
    static inline void NAME##_pop(struct NAME *h)                                              \
    {                                                                                          \
        uint32_t n = --h->len, i = 0;                                                          \
        E *v = h->v;                                                                           \
        if (!n)                                                                                \
            return;                                                                            \
        for (uint32_t c; (c = 4 * i + 1) < n;) {                                               \
            uint32_t m = NAME##_minc(v, c, n);                                                 \
            v[i] = v[m];                                                                       \
            NODE(v, i)->idx = i;                                                               \
            i = m;                                                                             \
        }                                                                                      \
        v[i] = v[n];                                                                           \
        NAME##_up(h, i);                                                                       \
    }

typedef struct {
    pt_nanos when;
    struct node *n;
} wide_entry;
#define WIDE_KEY(v, i) ((v)[i].when)
#define WIDE_NODE(v, i) ((v)[i].n)
DEFINE_HEAP(wide, wide_entry, WIDE_KEY, WIDE_NODE)

typedef struct node *node_ptr;
#define PTR_KEY(v, i) ((v)[i]->when)
#define PTR_NODE(v, i) ((v)[i])
DEFINE_HEAP(narrow, node_ptr, PTR_KEY, PTR_NODE)

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) { return pt__xorshift64(&rng); }

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* N nodes an hour away, shuffled in memory. rpc shape: each op pushes one
 * due soon (it sifts to the top) and pops the head, along the same path
 * every time. random shape: each op pops the head and pushes a random
 * time, so paths (and the nodes a pointer heap reads) vary. */
static double run(int layout, int random_shape, uint32_t n, long ops)
{
    struct node *nodes = aligned_alloc(64, (size_t)(n + 2) * sizeof *nodes);
    uint32_t *perm = malloc(n * sizeof *perm);
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    for (uint32_t i = n - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(rnd() % (i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    struct wide hw = {malloc((size_t)(n + 2) * sizeof(wide_entry)), 0};
    struct narrow hn = {malloc((size_t)(n + 2) * sizeof(struct node *)), 0};
#define PUSH(x)                                                                                \
    do {                                                                                       \
        if (layout == 0) {                                                                     \
            hw.v[hw.len] = (wide_entry){(x)->when, (x)};                                       \
            wide_up(&hw, hw.len++);                                                            \
        } else {                                                                               \
            hn.v[hn.len] = (x);                                                                \
            narrow_up(&hn, hn.len++);                                                          \
        }                                                                                      \
    } while (0)
    for (uint32_t i = 0; i < n; i++) {
        struct node *x = &nodes[perm[i]];
        x->when = 3600000000000LL + (pt_nanos)(rnd() % 1000000000);
        PUSH(x);
    }
    struct node *fresh[2] = {&nodes[n], &nodes[n + 1]};
    pt_nanos t0 = pt_nanotime();
    for (long k = 0; k < ops; k++) {
        struct node *x;
        if (random_shape) {
            x = layout == 0 ? hw.v[0].n : hn.v[0];
            if (layout == 0)
                wide_pop(&hw);
            else
                narrow_pop(&hn);
            x->when += (pt_nanos)(rnd() % 1000000000);
        } else {
            x = fresh[k & 1];
            x->when = 100000000 + k;
        }
        PUSH(x);
        if (!random_shape) {
            if (layout == 0)
                wide_pop(&hw);
            else
                narrow_pop(&hn);
        }
    }
    double ns = (double)(pt_nanotime() - t0) / (double)ops;
    free(hw.v);
    free(hn.v);
    free(perm);
    free(nodes);
    return ns;
}

int main(void)
{
    static const uint32_t sizes[] = {1024, 32768, 1048576};
    printf("heap entry layout: the same 4-ary heap code, {when, ptr} (16 B) against {ptr} (8 B,\n"
           "`when` read through the pointer, Go <= 1.22); nodes are %zu-byte timers\n",
           sizeof(struct node));
    printf("%-7s %9s %24s %24s\n", "shape", "N", "{when,ptr} ns/op", "{ptr} ns/op");
    for (int shape = 0; shape < 2; shape++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            double r[2][5];
            for (int rep = 0; rep < 5; rep++)
                for (int l = 0; l < 2; l++)
                    r[l][rep] = run(l, shape, sizes[s], 1000000);
            qsort(r[0], 5, sizeof(double), cmp);
            qsort(r[1], 5, sizeof(double), cmp);
            printf("%-7s %9u %10.1f [%5.1f-%5.1f] %10.1f [%5.1f-%5.1f]\n",
                   shape ? "random" : "rpc", sizes[s], r[0][2], r[0][0], r[0][4], r[1][2],
                   r[1][0], r[1][4]);
        }
    printf("medians of 5 [min-max]; reproduce: build-bench/bench/ptbench-layout\n");
    return 0;
}
