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

# ---- fuzz_pwheel: [code, wheel, timer, args...] ----
W_START, W_STOP, W_STOPSYNC, W_RESET, W_MODIFY, W_MOVE, W_CHECK, W_ACTION, W_DESTROY = 0, 1, 2, 3, 4, 5, 6, 8, 9
def wspan(scale, v): return [6, scale, v]     # when = now + v << scale
W_NOW, W_NEVER, W_NEAR_MAX = [0], [1], [4 | (2 << 3)]
WP_ONE = [0]
def wp_span(scale, v): return [4, scale, v]   # period 1 + v << scale
def wadv(scale, v): return [2, scale, v]      # now += v << scale, then check
WADV_MAX = [3]
def wop(code, h=0, t=0, *args):
    out = [code, h, t]
    for a in args:
        out += a
    return out
pw = {
    "every_level": sum((wop(W_START, k % 3, k, wspan(8 + 6 * k, 3), WP_ONE) for k in range(8)), [])
        + sum((wop(W_CHECK, h, 0, wadv(8 + 6 * k, 4)) for k in range(8) for h in range(3)), []),
    "ticker_and_actions": wop(W_START, 1, 0, wspan(14, 9), wp_span(12, 7)) + wop(W_ACTION, 2, 0, [3 | (1 << 3)])
        + wop(W_START, 1, 1, wspan(10, 1), WP_ONE) + wop(W_ACTION, 1, 1, [2 | (0 << 2) | (0 << 3)]) + [8, 1, 1]
        + wop(W_START, 1, 2, wspan(10, 2), wp_span(10, 1)) + wop(W_ACTION, 1, 2, [1])
        + sum((wop(W_CHECK, 1, 0, wadv(12, 5)) for _ in range(6)), []),
    "move_and_destroy": wop(W_START, 0, 0, wspan(20, 5), WP_ONE) + wop(W_START, 0, 1, W_NEVER, WP_ONE)
        + wop(W_MODIFY, 0, 2, wspan(30, 1), WP_ONE, [9]) + wop(W_DESTROY, 0) + wop(W_MOVE, 2, 0)
        + wop(W_DESTROY, 0) + wop(W_CHECK, 2, 0, wadv(31, 2)) + wop(W_STOPSYNC, 0, 1) + wop(W_DESTROY, 2),
    "far_and_never": wop(W_START, 0, 0, W_NEAR_MAX, WP_ONE) + wop(W_START, 2, 1, wspan(55, 200), WP_ONE)
        + wop(W_START, 1, 2, W_NOW, [5, 1]) + wop(W_CHECK, 0, 0, WADV_MAX) + wop(W_CHECK, 1, 0, [0])
        + wop(W_CHECK, 2, 0, [0]) + wop(W_RESET, 0, 3, W_NEAR_MAX),
}
for k in range(4):
    pw["random_%d" % k] = [rng.randrange(256) for _ in range(300)]
os.makedirs(os.path.join(here, "corpus", "pwheel"), exist_ok=True)
for name, data in pw.items():
    with open(os.path.join(here, "corpus", "pwheel", name), "wb") as f:
        f.write(bytes(b & 0xff for b in data))
print("wrote", len(seeds), "+", len(tt), "+", len(pw), "seeds")
