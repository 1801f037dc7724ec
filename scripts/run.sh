#!/usr/bin/env bash
# The main job: ptbench's standard comparison of every timer design, with
# Go 1.19's runtime timers, tokio's and libuv's side by side, and the HTTP
# servers under wrk. Writes the table, JSON lines, CSV and plots under
# results/ (README.md says how long each part took).
# Extra arguments go to ptbench (e.g. -w rpc -t 1,2 for a quick look).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh golang-1.19-go libuv1-dev gnuplot-nox git wrk nginx-light curl cargo librust-tokio-dev
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPT_BUILD_TESTS=OFF >/dev/null
# the peers are the build's (target ptbench-peers), not ptbench's to make
cmake --build build-bench -j"$(nproc)" --target ptbench ptbench-peers ptbench-layout
./build-bench/bench/ptbench compare -o results "$@"
