#!/usr/bin/env bash
# Configures (once) and builds hora into build/ (or $HORA_BUILD_DIR). Incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${HORA_BUILD_DIR:-build}
extra=()
if [[ "${CI:-}" == "true" ]]; then extra+=(-DHORA_WERROR=ON); fi
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${extra[@]}" "$@" >"$BUILD_DIR.configure.log" 2>&1 \
    || { cat "$BUILD_DIR.configure.log"; exit 1; }
  grep "hora:" "$BUILD_DIR.configure.log" || true
fi
cmake --build "$BUILD_DIR" -j "$(nproc)"
