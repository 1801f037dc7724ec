#!/usr/bin/env bash
# The verification layer (test/README.md) that needs more than the normal
# build: the spin model (with its seeded-bug negative checks) and the
# libFuzzer targets, each run for a bounded time. The fault-injection,
# bad-input and fuzz-replay tests are ordinary ctest tests (suite verify)
# and run with every scripts/test.sh.
#   scripts/verify.sh                 model, then each fuzz target for 20 s
#   scripts/verify.sh model|fuzz      one of the two
#   PT_FUZZ_SECONDS=600 scripts/verify.sh fuzz    a longer fuzzing session
# A fuzz target that fails leaves the input under build-vf-fuzz/artifacts/;
# copy it to test/fuzz/regress/<target>/<what-it-caught> to keep it as a
# regression test (test_verify replays that directory in every build).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh spin clang libclang-rt-14-dev
what="${1:-all}"
seconds="${PT_FUZZ_SECONDS:-20}"
start=$SECONDS

if [ "$what" = all ] || [ "$what" = model ]; then
    echo "== model: spin on test/model/ptimer.pml"
    bash test/model/check.sh all build-vf-model
fi

if [ "$what" = all ] || [ "$what" = fuzz ]; then
    echo "== fuzz: libFuzzer targets, ${seconds} s each"
    dir=build-vf-fuzz
    CC=clang cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPT_FUZZ=ON \
        -DPT_BUILD_BENCH=OFF -DPT_MIMALLOC=OFF >/dev/null
    cmake --build "$dir" -j2 --target fuzz_ptimer fuzz_timerthread fuzz_pwheel fuzz_lheap \
        >/dev/null
    # Two targets at a time, one a core: each gets its seconds to itself.
    fuzz_one() {
        local target=$1
        # Work on a copy: new corpus entries stay out of the repository.
        local work="$dir/corpus/$target" log="$dir/fuzz_$target.log"
        rm -rf "$work" && mkdir -p "$work" "$dir/artifacts"
        cp test/fuzz/corpus/"$target"/* "$work"/
        if "$dir/test/fuzz_$target" -max_total_time="$seconds" -timeout=30 -max_len=1024 \
            -artifact_prefix="$dir/artifacts/$target-" -print_final_stats=1 "$work" >"$log" 2>&1; then
            runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
            echo "ok   fuzz_$target: $runs inputs in ${seconds} s, no failure" >"$dir/fuzz_$target.status"
        else
            { echo "FAIL fuzz_$target (log: $log)"
              grep -E "^fuzz_|ERROR|SUMMARY|Test unit written|timeout" "$log" | head -20
            } >"$dir/fuzz_$target.status"
            return 1
        fi
    }
    failed=0
    targets=(ptimer timerthread pwheel lheap)
    rm -f "$dir"/fuzz_*.status
    for target in "${targets[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n || failed=1; done
        fuzz_one "$target" &
    done
    while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
    for target in "${targets[@]}"; do
        cat "$dir/fuzz_$target.status" 2>/dev/null || echo "FAIL fuzz_$target (it said nothing)"
    done
    [ "$failed" -eq 0 ] || exit 1
fi
echo "== verify took $((SECONDS - start)) s"
