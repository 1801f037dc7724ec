/* The input decoder of the wheel-shaped fuzz targets (fuzz_pwheel.c,
 * fuzz_lheap.c), which read the same encoding, so that one seed corpus
 * serves both: bytes taken one at a time (0 once the input is spent), and
 * the times and periods they encode. Included after the target's state F,
 * which has the input (p, n) and the current time (now). */
#ifndef PT_FUZZ_WHEEL_INPUT_H
#define PT_FUZZ_WHEEL_INPUT_H

static inline pt_nanos sat_add(pt_nanos a, pt_nanos b)
{
    pt_nanos r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static inline uint8_t take(void)
{
    if (!F.n)
        return 0;
    F.n--;
    return *F.p++;
}

/* A distance of 0 to ~2^62 ns: a byte scaled by 2^(0..55). */
static inline pt_nanos gen_span(void)
{
    uint8_t scale = take() % 56, v = take();
    return (pt_nanos)v << scale;
}

static inline pt_nanos gen_when(void)
{
    uint8_t b = take();
    switch (b & 7) {
    case 0:
        return 0;
    case 1:
        return -1 - (b >> 3);
    case 2:
        return sat_add(F.now, b >> 3);
    case 3:
        return F.now - (b >> 3);
    case 4:
        return INT64_MAX - (b >> 3);
    case 5:
        return INT64_MAX;
    default:
        return sat_add(F.now, gen_span());
    }
}

static inline pt_nanos gen_period(void)
{
    uint8_t b = take();
    switch (b & 7) {
    case 0:
    case 1:
    case 2:
        return 0;
    case 3:
        return 1 + (b >> 3);
    case 4:
        return 1 + gen_span();
    case 5:
        return INT64_MAX / 2 + take();
    case 6:
        return -1 - (b >> 3); /* -EINVAL */
    default:
        return 7 + (pt_nanos)(b >> 3) * 4099;
    }
}

#endif
