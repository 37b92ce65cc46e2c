#!/bin/sh
# A corrupted frame on the builtin backend's TCP transport (HORA_SHM=0): the LD_PRELOAD library
# corrupt_frame flips the magic of one frame header rank VICTIM sends. The rank receiving it must
# fail with "corrupted frame header from rank VICTIM", and every other rank (the victim too,
# through the failure reports) must fail naming it, within HORA_TIMEOUT_S + 2 s of the first
# report; the job exits non-zero and leaves no process behind.
# Usage: corrupt_frame_check.sh HORARUN CHAOS_PROBE CORRUPT_FRAME_SO NP VICTIM
set -u
HORARUN=$1 PROBE=$2 so=$3 np=$4 victim=$5
. "$(dirname "$0")/chaos_lib.sh"
: "${HORA_TIMEOUT_S:?set HORA_TIMEOUT_S to a few seconds}"
GRACE_S=5
export HORA_BACKEND=builtin HORA_SHM=0
# The calibration at init sends as many frames as its time budget lets it: off, init sends
# a fixed few, and the corrupted frame lands in the probe's allreduces after every rank started.
export HORA_CALIBRATE_MS=0
echo "== rank $victim of $np sends one corrupted frame header"
export LD_PRELOAD="$so" CHAOS_CORRUPT_RANK="$victim" CHAOS_CORRUPT_FRAME=300
start_job "$np" allreduce
wait_started "$np"
finish_job $((${HORA_TIMEOUT_S%.*} + MARGIN_S + GRACE_S + 30))
[ "$RC" -ne 0 ] || fail "horarun exited 0 although a frame was corrupted"
grep -q "corrupted frame header from rank $victim" "$OUT" ||
  fail "no rank reported the corrupted frame from rank $victim"
first=$(sed -n 's/.*chaos_probe: rank [0-9]* failed at \([0-9.]*\) .*/\1/p' "$OUT" | sort -n | head -n 1)
[ -n "$first" ] || fail "no rank reported a failure"
r=0
while [ "$r" -lt "$np" ]; do
  check_survivor "$r" "$victim" "$first" "corrupted frame header from rank $victim"
  r=$((r + 1))
done
check_clean
echo "PASS: a corrupted frame from rank $victim failed every rank naming it"
