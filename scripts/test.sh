#!/usr/bin/env bash
# Sets up the machine, builds hora and runs the whole test suite (CTest: unit tests,
# multi-process tests under horarun and mpirun, Python tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
BUILD_DIR=${HORA_BUILD_DIR:-build}
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 600 -j 2 "$@"
