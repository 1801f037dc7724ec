#!/usr/bin/env bash
# The test command: install what is missing, configure, build, run ctest.
#   scripts/test.sh                 release build, every test
#   scripts/test.sh thread          the same under ThreadSanitizer
#   scripts/test.sh address         the same under AddressSanitizer (+LeakSanitizer)
#   scripts/test.sh minimal         release, without mimalloc and without liburing
# Extra arguments go to ctest (e.g. -L unit for the quick run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
san="${1:-}"
case "$san" in
    thread|address|undefined) shift; opts=(-DPT_SANITIZE="$san") ;;
    minimal) shift; opts=(-DPT_MIMALLOC=OFF -DPT_URING=OFF) ;;
    *) san=""; opts=(-DPT_SANITIZE=) ;;
esac
dir="build${san:+-$san}"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${opts[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
cd "$dir"
# a test per core: every test bounds waiting, never speed, so a
# neighbour on the other core is load it must stand (PT_TEST_JOBS=1 for
# one at a time)
ctest --output-on-failure -j"${PT_TEST_JOBS:-$(nproc)}" "$@" | tee ctest.log
# skipped tests are listed by ctest; their count, for the CI log
echo "skipped in build${san:+-$san}: $(grep -c '(Skipped)$' ctest.log || true)"
