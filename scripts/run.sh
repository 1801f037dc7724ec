#!/usr/bin/env bash
# The main job: ptbench compare, every timer design and the scheduler beside
# Go 1.19's, tokio's, libuv's and nginx, the verdict first. With no
# arguments, the workloads that decide "which design, when" at 1 and 2
# threads (README.md says how long it takes); --full, today's whole
# comparison, whose page then replaces bench/RESULTS.md. Everything the run
# writes (the page, tables, JSON lines, CSV, plots) goes to results/.
# Other arguments go to ptbench (e.g. -w rpc -t 1,2 for a quick look).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/deps.sh golang-1.19-go libuv1-dev gnuplot-nox git wrk nginx-light curl cargo librust-tokio-dev
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPT_BUILD_TESTS=OFF >/dev/null
# the peers are the build's (target ptbench-peers), not ptbench's to make
cmake --build build-bench -j"$(nproc)" --target all ptbench-peers
# Seastar's timer set, an engine from outside the tree: built as a user
# builds theirs, against the installed package, and loaded with --engine.
cmake --install build-bench --prefix build-bench/prefix >/dev/null
cmake -S examples/engine -B build-bench/engine -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$PWD/build-bench/prefix" >/dev/null
cmake --build build-bench/engine --target timerset >/dev/null
./build-bench/bench/ptbench compare --engine build-bench/engine/libtimerset.so -o results "$@"
# The page of record comes from the whole comparison as it stands, run
# with nothing changed: only then is it copied over.
if [ "$*" = "--full" ]; then
    cp results/RESULTS.md bench/RESULTS.md
    echo "bench/RESULTS.md: replaced by this run's page"
fi
echo "scripts/run.sh $*: $(( ($(date +%s) - start) / 60 )) min $(( ($(date +%s) - start) % 60 )) s in all"
