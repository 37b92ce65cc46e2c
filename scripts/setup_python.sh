#!/usr/bin/env bash
# Creates hora's Python environment once per machine, outside the checkout, so that later
# clones and CI reuse it: a virtual environment at ${HORA_VENV:-$HOME/.cache/hora/venv} made
# from /usr/bin/python3, with scripts/requirements.txt installed. A stamp file in the
# environment holds the requirement list's hash: when it matches, this script does nothing
# (quietly, without the network). Prints one line per install step. Concurrent runs wait for
# each other (flock).
#
# Usage: scripts/setup_python.sh [--print-python]   (--print-python: only print the
#        environment's interpreter path, creating nothing)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${HORA_VENV:-${HOME:?}/.cache/hora/venv}
if [[ ${1:-} == --print-python ]]; then
  echo "$VENV/bin/python"
  exit 0
fi
BASE_PYTHON=/usr/bin/python3
REQUIREMENTS=scripts/requirements.txt
STAMP=$VENV/.hora-requirements.sha256
want=$(sha256sum <"$REQUIREMENTS" | cut -d' ' -f1)

is_current() { [[ -x $VENV/bin/python && -f $STAMP && $(<"$STAMP") == "$want" ]]; }
is_current && exit 0

mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
is_current && exit 0  # another run finished it while this one waited

# step NAME COMMAND...: runs one install step with its output in a log shown only on failure.
step() {
  local name=$1 log
  shift
  echo "setup: $name"
  log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "setup: '$name' failed (log above)" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
}

if [[ ! -x $VENV/bin/python ]]; then
  [[ -x $BASE_PYTHON ]] || { echo "setup: $BASE_PYTHON not found (apt-get install python3)" >&2; exit 1; }
  step "creating the Python environment $VENV from $BASE_PYTHON ($($BASE_PYTHON --version))" \
    "$BASE_PYTHON" -m venv "$VENV"
fi
pkgs=$(grep -v '^\s*#' "$REQUIREMENTS" | grep -v '^\s*$' | tr '\n' ' ')
step "installing into $VENV: ${pkgs% } (torch and tensorflow: several GB, minutes)" \
  "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input -r "$REQUIREMENTS"
echo "$want" >"$STAMP"
