#!/usr/bin/env bash
# The main job. Until ptbench lands, it builds and runs the usage example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target example_usage
./build/example_usage
