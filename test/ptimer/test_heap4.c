#include <stdint.h>

#include "harness.h"
#include "ptimer/heap4.h"

struct item {
    pt_nanos when;
    uint32_t idx;
};

void test_heap4_orders_and_tracks_indices(void)
{
    enum { N = 5000 };
    static struct item items[N];
    pt_heap4 h;
    pt_heap4_init(&h, (int32_t)offsetof(struct item, idx));
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < N; i++) {
        items[i].when = (pt_nanos)(pt_test_rng(&x) % 100000) + 1;
        CHECK_EQ(pt_heap4_reserve(&h, 1), 0);
        pt_heap4_push(&h, items[i].when, &items[i]);
    }
    CHECK(pt_heap4_valid(&h));
    /* remove every third item by its stored index */
    for (int i = 0; i < N; i += 3) {
        CHECK(h.v[items[i].idx].item == &items[i]);
        pt_heap4_remove(&h, items[i].idx);
        CHECK(pt_heap4_valid(&h));
    }
    /* change keys in place */
    for (int i = 1; i < N; i += 3) {
        items[i].when = 200000 - items[i].when;
        h.v[items[i].idx].when = items[i].when;
        pt_heap4_fix(&h, items[i].idx);
    }
    CHECK(pt_heap4_valid(&h));
    pt_nanos last = 0;
    while (h.len) {
        CHECK(h.v[0].when >= last);
        last = h.v[0].when;
        pt_heap4_remove(&h, 0);
    }
    pt_heap4_shrink(&h);
    pt_heap4_free(&h);
}
