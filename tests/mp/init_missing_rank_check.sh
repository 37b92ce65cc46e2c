#!/bin/sh
# init fails cleanly when one rank never starts: under `horarun -np 2`, rank 1 sleeps instead
# of calling hora init. With HORA_START_TIMEOUT_S=2, rank 0's init must fail within a few
# seconds naming rank 1, and horarun must exit non-zero (tearing rank 1 down).
# Usage: init_missing_rank_check.sh HORARUN INIT_PROBE NEVER_INIT_WRAPPER
set -u
horarun=$1 probe=$2 wrapper=$3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
HORA_START_TIMEOUT_S=2 "$horarun" -np 2 sh "$wrapper" "$probe" >"$out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ "$rc" -ne 0 ] || fail "horarun exited 0 although rank 1 never initialised"
grep -q "never arrived: rank 1" "$out" || fail "no message naming the missing rank 1"
grep -q "HORA_START_TIMEOUT_S" "$out" || fail "the message does not name HORA_START_TIMEOUT_S"
[ "$elapsed" -le 20 ] || fail "took ${elapsed}s, want a few seconds"
echo "PASS: exit $rc after ${elapsed}s"
