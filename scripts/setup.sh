#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test hora: Debian's packages,
# then hora's Python environment (scripts/setup_python.sh, once per machine, outside the
# checkout). Idempotent: only what is missing is installed, and a machine that has it all is
# left alone (quiet, no network).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config clang ccache
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  libopenmpi-dev openmpi-bin libgloo-dev libhwloc-dev
  pybind11-dev python3-dev python3-venv
  libssl-dev libcli11-dev nlohmann-json3-dev libxxhash-dev libopenblas-dev
  libclang-rt-14-dev
  iproute2 slurm-wlm munge
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  log=$(mktemp)
  if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "setup: apt-get failed (log above)" >&2
    exit 1
  fi
  rm -f "$log"
fi

bash "$(dirname "$0")/setup_python.sh"
