#!/usr/bin/env bash
# Configures (once) and builds hora into build/ (or $HORA_BUILD_DIR). Incremental.
# When hora's Python environment exists (scripts/setup_python.sh), its interpreter is the
# build's HORA_PYTHON: the binding is built for it and tests/python run with it. A build
# directory configured before the environment existed is pointed at it here.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${HORA_BUILD_DIR:-build}
extra=()
if [[ "${CI:-}" == "true" ]]; then extra+=(-DHORA_WERROR=ON); fi
# ccache (scripts/setup.sh installs it) makes rebuilds in fresh build directories, and the
# C++ compile inside `pip install .` (tests/packaging), cache hits.
# Paths relative to the checkout (CCACHE_BASEDIR) let a fresh clone at another path hit the
# cache too.
if command -v ccache >/dev/null; then
  extra+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=1
fi
python=$(bash scripts/setup_python.sh --print-python)
[[ -x $python ]] || python=""
if [[ -n $python ]]; then extra+=(-DHORA_PYTHON="$python"); fi
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${extra[@]}" "$@" >"$BUILD_DIR.configure.log" 2>&1 \
    || { cat "$BUILD_DIR.configure.log"; exit 1; }
  grep "hora:" "$BUILD_DIR.configure.log" || true
elif [[ -n $python ]] && ! grep -q "^HORA_PYTHON:[A-Z]*=." "$BUILD_DIR/CMakeCache.txt"; then
  echo "build: $BUILD_DIR now builds the Python binding for $python"
  cmake "$BUILD_DIR" -DHORA_PYTHON="$python" >"$BUILD_DIR.configure.log" 2>&1 \
    || { cat "$BUILD_DIR.configure.log"; exit 1; }
fi
cmake --build "$BUILD_DIR" -j "$(nproc)"
