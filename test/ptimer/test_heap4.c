#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "harness.h"
#include "base/heap4.h"

struct item {
    pt_nanos when;
    uint32_t idx;
};

void test_heap4_orders_and_tracks_indices(void)
{
    enum { N = 5000 };
    static struct item items[N];
    pt__heap4 h;
    pt__heap4_init(&h, (int32_t)offsetof(struct item, idx));
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < N; i++) {
        items[i].when = (pt_nanos)(pt__xorshift64(&x) % 100000) + 1;
        CHECK_EQ(pt__heap4_reserve(&h, 1), 0);
        pt__heap4_push(&h, items[i].when, &items[i]);
    }
    CHECK(pt__heap4_valid(&h));
    /* remove every third item by its stored index */
    for (int i = 0; i < N; i += 3) {
        CHECK(h.v[items[i].idx].item == &items[i]);
        pt__heap4_remove(&h, items[i].idx);
        CHECK(pt__heap4_valid(&h));
    }
    /* change keys in place */
    for (int i = 1; i < N; i += 3) {
        items[i].when = 200000 - items[i].when;
        h.v[items[i].idx].when = items[i].when;
        pt__heap4_fix(&h, items[i].idx);
    }
    CHECK(pt__heap4_valid(&h));
    pt_nanos last = 0;
    while (h.len) {
        CHECK(h.v[0].when >= last);
        last = h.v[0].when;
        pt__heap4_remove(&h, 0);
    }
    pt__heap4_shrink(&h);
    pt__heap4_free(&h);
}

/* replace_top is a pop of the top and a push in one sift, and second()
 * names the entry a pop would bring to the top: checked against a pop
 * and a push on a twin heap, over random keys with many ties, sizes from
 * one entry up, and with the new entry earliest, latest and in between. */
void test_heap4_replace_top_is_a_pop_and_a_push(void)
{
    enum { N = 2000 };
    static struct item a[N + 1], b[N + 1];
    pt__heap4 ha, hb;
    pt__heap4_init(&ha, (int32_t)offsetof(struct item, idx));
    pt__heap4_init(&hb, (int32_t)offsetof(struct item, idx));
    CHECK_EQ(pt__heap4_second(&ha), 0); /* empty */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < N; i++) {
        a[i].when = b[i].when = (pt_nanos)(pt__xorshift64(&x) % 500) + 10;
        CHECK_EQ(pt__heap4_reserve(&ha, 1), 0);
        CHECK_EQ(pt__heap4_reserve(&hb, 1), 0);
        pt__heap4_push(&ha, a[i].when, &a[i]);
        pt__heap4_push(&hb, b[i].when, &b[i]);
        if (i == 0)
            CHECK_EQ(pt__heap4_second(&ha), 0); /* one entry: none would remain */
    }
    /* Take the tops out one by one, each replaced by the one taken before:
     * the two heaps must agree on every top and every length. */
    struct item *ra = &a[N], *rb = &b[N];
    ra->when = rb->when = 1; /* the first replacement: earlier than all */
    for (int round = 0; round < 3 * N; round++) {
        uint32_t sec = pt__heap4_second(&ha);
        CHECK(sec >= 1 && sec <= 4); /* N entries throughout: a child of the top */
        pt_nanos second_when = ha.v[sec].when;
        struct item *top_a = ha.v[0].item, *top_b = hb.v[0].item;
        CHECK_EQ(ha.v[0].when, hb.v[0].when);
        uint32_t at = pt__heap4_replace_top(&ha, ra->when, ra);
        CHECK(ha.v[at].item == ra);
        if (ra->when < second_when)
            CHECK_EQ(at, 0); /* earlier than all the rest: it did not move */
        pt__heap4_remove(&hb, 0);
        CHECK_EQ(hb.v[0].when, second_when); /* what second() named */
        pt__heap4_push(&hb, rb->when, rb);
        CHECK(pt__heap4_valid(&ha));
        CHECK(pt__heap4_valid(&hb));
        CHECK_EQ(ha.len, hb.len);
        CHECK_EQ(ha.v[0].when, hb.v[0].when);
        /* the next replacement: the item just taken out, at a new time */
        ra = top_a;
        rb = top_b;
        pt_nanos w = round % 3 == 0   ? 1                                       /* earliest */
                     : round % 3 == 1 ? 100000                                  /* latest */
                                      : (pt_nanos)(pt__xorshift64(&x) % 500) + 10; /* between */
        ra->when = rb->when = w;
    }
    /* Down to one entry: replace_top still works, and then on empty it is a push. */
    while (ha.len > 1) {
        pt__heap4_remove(&ha, 0);
        pt__heap4_remove(&hb, 0);
    }
    CHECK_EQ(pt__heap4_second(&ha), 0);
    CHECK_EQ(pt__heap4_replace_top(&ha, 7, &a[0]), 0);
    CHECK(ha.v[0].item == &a[0] && a[0].idx == 0 && ha.len == 1);
    pt__heap4_remove(&ha, 0);
    CHECK_EQ(pt__heap4_replace_top(&ha, 8, &a[1]), 0);
    CHECK(ha.len == 1 && ha.v[0].when == 8);
    pt__heap4_free(&ha);
    pt__heap4_free(&hb);
}

/* From PT__ARRAY_MAP_BYTES (4 KiB, 256 entries) the array is a mapping
 * grown and shrunk with mremap: entries survive every crossing of that
 * line in both directions, a failed growth into a mapping and within one
 * leaves the heap as it was, and freeing gives back every block.
 * (Sanitized builds keep arrays in the allocator: alloc.h says why; the
 * same sequence then runs without the mapping assertions.) */
void test_heap4_grows_into_a_mapping_and_shrinks_back_keeping_order(void)
{
    enum { N = 300000 };
    struct item *items = calloc(N, sizeof *items);
    CHECK(items != NULL);
    long live0 = pt__alloc_live();
    pt__heap4 h;
    pt__heap4_init(&h, (int32_t)offsetof(struct item, idx));
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int failures = 0;
    /* the capacity whose doubling crosses into a mapping (128 entries, 2
     * -> 4 KiB), and one well inside (2 -> 4 MiB remaps a mapping) */
    uint32_t crossing = PT__ARRAY_MAP_LINE / sizeof(pt__heap4_entry) / 2, inside = 131072;
    for (int i = 0; i < N; i++) {
        items[i].when = (pt_nanos)(pt__xorshift64(&x) % 1000000000) + 1;
        if (h.len == h.cap && (h.cap == crossing || h.cap == inside)) {
            pt__alloc_fail_after(0);
            CHECK_EQ(pt__heap4_reserve(&h, 1), -ENOMEM);
            CHECK_EQ(h.len, (uint32_t)i);
            CHECK(pt__heap4_valid(&h));
            failures++;
        }
        CHECK_EQ(pt__heap4_reserve(&h, 1), 0);
        pt__heap4_push(&h, items[i].when, &items[i]);
    }
    CHECK_EQ(failures, 2);
    bool maps = PT__ARRAY_MAP_BYTES != SIZE_MAX;
    CHECK(!maps || h.cap * sizeof *h.v >= PT__ARRAY_MAP_BYTES);
    CHECK(pt__heap4_valid(&h));
    for (int i = 0; i < N; i++)
        CHECK(h.v[items[i].idx].item == &items[i]);
    /* Pop in order, shrinking as a P does: mapped -> mapped, then back
     * under the line into the allocator. */
    pt_nanos last = 0;
    bool shrank_mapped = false, shrank_below = false;
    while (h.len) {
        CHECK(h.v[0].when >= last);
        last = h.v[0].when;
        pt__heap4_remove(&h, 0);
        uint32_t cap = h.cap;
        pt__heap4_shrink(&h);
        if (h.cap != cap) {
            CHECK(pt__heap4_valid(&h));
            if (h.cap * sizeof *h.v >= PT__ARRAY_MAP_BYTES)
                shrank_mapped = true;
            else if (cap * sizeof *h.v >= PT__ARRAY_MAP_BYTES)
                shrank_below = true;
        }
    }
    CHECK(!maps || (shrank_mapped && shrank_below));
    pt__heap4_free(&h);
    CHECK_EQ(pt__alloc_live(), live0);
    free(items);
}
