#!/usr/bin/env bash
# Sets up the machine, builds hora and runs the main job: the kernels benchmark table.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
BUILD_DIR=${HORA_BUILD_DIR:-build}
"$BUILD_DIR/benchmarks/kernels_bench" --benchmark_min_time=0.2
