#!/usr/bin/env python3
"""Writes the seed corpus: a few inputs per target that each walk one
behaviour on purpose (the fuzzer mutates from there). The encodings are
the decoders' in fuzz_ptimer.c and fuzz_timerthread.c; rerun after
changing either, then commit corpus/."""
import os, random

here = os.path.dirname(os.path.abspath(__file__))

# ---- fuzz_ptimer: [code, heap, timer, args...] ----
START, STOP, RESET, MODIFY, MOVE, CHECK, STOPSYNC, ACTION, DESTROY, VERIFY = 0, 1, 2, 3, 4, 5, 7, 8, 9, 10
def w_in(d): return [2 | (d << 3)]            # when = now + d (d < 32)
def w_far(k): return [5, k]                   # when = now + k * 1000
W_ZERO, W_NEVER, W_MAX = [0], [1], [6]
def w_near_max(d): return [4 | (d << 3)]
P_ONE = [0]
def p_tick(p): return [3 | ((p - 1) << 3)]    # period p (1..32)
P_HUGE = [5, 1]                               # ~INT64_MAX/2: overflows to never
P_NEG = [6]
def adv(d): return [1 | (d << 2)]             # now += d (d < 64), owner check
def adv_hundreds(k): return [2, k]            # now += k * 100
ADV_MAX = [3]                                 # now = INT64_MAX
NONOWNER = 4                                  # or into an advance byte
FAIL0, FAIL1 = 0xf0, 0xf1

def op(code, h=0, t=0, *args):
    out = [code, h, t]
    for a in args:
        out += a if isinstance(a, list) else [a]
    return out

seeds = {
    "start_check_fire": op(START, 0, 0, w_in(5), P_ONE) + op(CHECK, 0, 0, adv(4)) + op(CHECK, 0, 0, adv(1)),
    "ticker_skips_missed": op(START, 1, 2, w_in(3), p_tick(7)) + op(CHECK, 1, 0, adv_hundreds(1)) + op(CHECK, 1, 0, adv(7)),
    "stop_reset_modify": op(START, 0, 1, w_in(9), P_ONE) + op(STOP, 0, 1) + op(RESET, 2, 1, w_in(4))
        + op(MODIFY, 2, 1, w_in(2), p_tick(3), 42) + op(CHECK, 0, 0, adv(5)) + op(CHECK, 2, 0, adv(1)),
    "modify_earlier_many": op(START, 0, 3, w_far(9), P_ONE) + sum((op(RESET, 1, 3, w_in(20 - k)) for k in range(8)), [])
        + op(CHECK, 0, 0, adv(13)),
    "move_with_deleted": op(START, 0, 0, w_in(5), P_ONE) + op(START, 0, 1, w_in(6), P_ONE) + op(START, 0, 2, w_in(7), p_tick(2))
        + op(STOP, 0, 1) + op(RESET, 0, 2, w_in(1)) + op(MOVE, 1, 0) + op(CHECK, 1, 0, adv(10)) + op(CHECK, 0, 0, adv(0)),
    "stop_sync_and_destroy": op(START, 2, 4, w_in(5), P_ONE) + op(STOP, 0, 4) + op(DESTROY, 2, 0) + op(STOPSYNC, 0, 4)
        + op(START, 2, 5, w_in(1), P_ONE) + op(DESTROY, 2, 0) + op(STOPSYNC, 0, 5) + op(DESTROY, 2, 0),
    "never_and_max": op(START, 0, 0, W_NEVER, P_ONE) + op(START, 0, 1, W_MAX, P_ONE) + op(START, 0, 2, w_near_max(3), p_tick(5))
        + op(START, 0, 3, W_ZERO, P_HUGE) + op(CHECK, 0, 0, ADV_MAX) + op(CHECK, 0, 0, ADV_MAX) + op(VERIFY),
    "callbacks_act_on_themselves": op(ACTION, 0, 0, 2 | (0 << 2)) + op(START, 0, 0, w_in(1), P_ONE)
        + op(ACTION, 1, 1, 2 | (3 << 2)) + op(START, 0, 1, w_in(2), p_tick(4))
        + op(ACTION, 0, 2, 3) + op(START, 0, 2, w_in(2), p_tick(2)) + op(ACTION, 0, 3, 1) + op(START, 0, 3, w_in(2), P_ONE)
        + op(CHECK, 0, 0, adv(3)) + op(CHECK, 1, 0, adv(5)) + op(CHECK, 0, 0, adv(5)),
    "injected_failures": [FAIL0] + op(START, 0, 0, w_in(5), P_ONE) + op(START, 0, 0, w_in(5), P_ONE)
        + [FAIL0] + op(MODIFY, 1, 1, w_in(3), P_ONE, 7) + [FAIL0] + op(MOVE, 1, 0) + [FAIL1] + op(MOVE, 2, 0)
        + op(CHECK, 2, 0, adv(9)),
    "bad_period": op(START, 0, 0, w_in(5), P_NEG) + op(MODIFY, 0, 0, w_in(5), P_NEG, 1) + op(START, 0, 0, w_in(5), P_ONE)
        + op(START, 0, 0, w_in(5), P_ONE) + op(CHECK, 0, 0, [adv(5)[0] | NONOWNER]),
}
rng = random.Random(20261121)
for k in range(4):
    seeds["random_%d" % k] = [rng.randrange(256) for _ in range(300)]

for name, data in seeds.items():
    with open(os.path.join(here, "corpus", "ptimer", name), "wb") as f:
        f.write(bytes(b & 0xff for b in data))

# ---- fuzz_timerthread: [code, arg, ...] ----
FAR, DUE, UNSCHED, FORGED, WAIT = 0, 2, 4, 6, 7
tt = {
    "far_then_unschedule_twice": [1, 0, FAR, 0, FAR, 1, UNSCHED, 0, UNSCHED, 0, UNSCHED, 1],
    "due_race_unschedule": [2, 0, DUE, 0, UNSCHED, 1, DUE, 0, DUE, 0, UNSCHED, 2, UNSCHED, 3, WAIT, 0, UNSCHED, 1],
    "forged_ids": [3, 0, FAR, 0] + sum(([FORGED, k, 0] for k in range(5)), []) + [UNSCHED, 0],
    "injected_failures": [0xf0, 0, FAR, 0, 0xf1, 0, 0xf2, 0, DUE, 0, 0xf0, 0, WAIT, 0],
    "many": [1, 0] + sum(([FAR if k % 3 else DUE, k, UNSCHED, k * 7] for k in range(40)), []),
}
for k in range(3):
    tt["random_%d" % k] = [rng.randrange(256) for _ in range(200)]
for name, data in tt.items():
    with open(os.path.join(here, "corpus", "timerthread", name), "wb") as f:
        f.write(bytes(b & 0xff for b in data))
print("wrote", len(seeds), "+", len(tt), "seeds")
