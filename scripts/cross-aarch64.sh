#!/usr/bin/env bash
# The aarch64 context switch (sched/context_aarch64.S), checked on this
# x86-64 machine: cross-compiles the sched lowest layer's test suite
# (test/sched/ctx) statically with aarch64-linux-gnu-gcc and runs each of its
# tests under qemu-user. The clock's suite (test/clock) goes with it: on
# aarch64 there is no TSC, so it checks the CLOCK_MONOTONIC fallback.
#   scripts/cross-aarch64.sh [build dir, default build-aarch64]
# Installs the cross compiler and qemu (Debian packages) when missing. If
# they cannot be had, says "skipped" and exits 0: the check is an extra,
# not a prerequisite of the build.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-build-aarch64}"
cc=aarch64-linux-gnu-gcc
qemu=qemu-aarch64

have() { command -v "$cc" >/dev/null && command -v "$qemu" >/dev/null; }
if ! have; then
    bash scripts/deps.sh gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user ||
        echo "cross-aarch64: could not install the cross tools" >&2
fi
if ! have; then
    echo "cross-aarch64: skipped ($cc or $qemu not available)"
    exit 0
fi

mkdir -p "$out"
bin="$out/test_sched_ctx"
# The same flags as the project's own build, warnings included; static so
# that qemu needs no aarch64 sysroot at run time.
"$cc" -std=gnu11 -O2 -g -static -pthread \
    -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-missing-prototypes \
    -I. -Iinclude -Itest -Itest/sched/ctx \
    test/harness.c test/main.c test/sched/ctx/test_switch.c test/sched/ctx/test_thread.c \
    test/sched/ctx/test_stack.c test/sched/ctx/regs_aarch64.S \
    sched/context_aarch64.S sched/stack.c sched/fiber.c \
    base/alloc.c base/clock.c base/tsc.c \
    -o "$bin" -lm
clockbin="$out/test_clock"
"$cc" -std=gnu11 -O2 -g -static -pthread \
    -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-missing-prototypes \
    -I. -Iinclude -Itest -Itest/clock \
    test/harness.c test/main.c test/clock/test_clock.c \
    base/alloc.c base/clock.c base/tsc.c \
    -o "$clockbin"

passed=0
failed=0
# run_suite BINARY PREFIX: each test of the binary in its own qemu process
run_suite() {
    for test in $("$qemu" "$1" --list | awk '{print $2}'); do
        if timeout 300 "$qemu" "$1" "$test"; then
            passed=$((passed + 1))
        else
            echo "FAILED: $2$test (aarch64, qemu)" >&2
            failed=$((failed + 1))
        fi
    done
}
run_suite "$clockbin" clock.
run_suite "$bin" ""
echo "cross-aarch64: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
