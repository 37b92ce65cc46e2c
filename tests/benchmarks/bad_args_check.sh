#!/bin/sh
# hora-bench with a bad argument under `horarun -np NP`: every rank must exit non-zero at
# once, and the one-line error plus the usage hint must be printed once (by rank 0 only).
# Usage: bad_args_check.sh HORARUN HORA_BENCH NP ARGS...
set -u
horarun=$1 bench=$2 np=$3
shift 3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
"$horarun" -np "$np" "$bench" "$@" >"$out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ "$rc" -ne 0 ] || fail "exit status 0 for bad arguments: $*"
errors=$(grep -c "hora-bench: " "$out")
hints=$(grep -c "usage: hora-bench" "$out")
[ "$errors" -eq 1 ] || fail "the error was printed $errors times, want once (rank 0 only)"
[ "$hints" -eq 1 ] || fail "the usage hint was printed $hints times, want once"
[ "$elapsed" -le 30 ] || fail "took ${elapsed}s to fail, want a few seconds"
echo "PASS: exit $rc after ${elapsed}s"
