#!/usr/bin/env bash
# The test command: install what is missing, configure, build, run ctest.
#   scripts/test.sh                 release build, every test
#   scripts/test.sh thread          the same under ThreadSanitizer
#   scripts/test.sh address         the same under AddressSanitizer (+LeakSanitizer)
# Extra arguments go to ctest (e.g. -L unit for the quick run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
san="${1:-}"
case "$san" in
    thread|address|undefined) shift ;;
    *) san="" ;;
esac
dir="build${san:+-$san}"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPT_SANITIZE="$san" >/dev/null
cmake --build "$dir" -j"$(nproc)"
cd "$dir"
ctest --output-on-failure -j1 "$@"
